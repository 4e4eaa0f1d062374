"""The baseline: the checks on the unmodified commit, and proof that they can judge.

Before any model call, the test command must run, collect tests, report per-test
results, and import the tree under test. A command or toolchain that cannot start
(recognized by its runner's own words: judge/unrunnable.py), a pytest usage or internal
error, an empty selection, a run without per-test results, a suite of which nothing
builds or imports (unless only the tests fail to, written before the code they call),
or tests that import the project from somewhere else stop the run with the command,
what happened and the fix. A module that fails to collect while others run does not
erase the baseline: its tests count as failing (a candidate may fix it, never add one).

Kept between runs (``cache_key``, ``load_cached``, ``save_cached``): lint and tests on
an unchanged tree are not rerun. When nothing that decides those results has changed
since a run measured them — the same tree (by git's tree id),
the same checks and sandbox settings, the same judge code, the same interpreter and
installed packages, the same variables passed to the checks — the next run reuses them.
Entries older than ``CACHE_MAX_AGE_S`` are measured again: tests that depend on the date or on
what the machine has are not trusted forever. The cache lives in ``.selfforge/`` (which
no check can see), written by this process only, as JSON (never pickle).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfforge.errors import SelfforgeError, UsageError
from selfforge.judge.rules.lint import LintFinding, parse_lint
from selfforge.judge.runners.import_roots import outside
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.command import CheckSpace, CommandResult, run_command, run_tests
from selfforge.judge.unrunnable import cannot_start, missing_program, no_tests, nothing_builds
from selfforge.judge.verdict import Observed
from selfforge.repo import git

# With no test that runs there is no judge: the explicit opt-out is the other way on.
OPT_OUT = ', or opt out with [checks] tests = "none" (changes then go to branches only)'
PYTEST_STATUS = {2: "was interrupted", 3: "hit an internal error", 4: "was used wrongly"}


@dataclass(frozen=True)
class Probe:
    """What one run of the test command on a tree showed."""

    result: CommandResult
    report: TestReport | None
    problem: str | None  # why it cannot judge, with the fix; None when it can
    warning: str | None = None
    # the problem is that nothing of the suite builds or imports (the toolchain started):
    # ``check`` judges a person's change on such a base strictly instead of stopping
    builds_nothing: bool = False

    def describe(self) -> str:
        report = self.report
        took = f"in {self.result.duration_s:.1f}s"
        if report is None:
            return f"exit {self.result.exit_code} {took}"
        failed = len(report.failing)
        errors = len(report.collect_errors)
        broken = f", {errors} module(s) failed to import" if errors else ""
        return (
            f"{report.collected} collected, {len(report.passed)} passed, {failed} failed"
            f"{broken} {took}"
        )


def probe_tests(
    command: str,
    tree: Path,
    timeout_s: float,
    space: CheckSpace,
    *,
    head: str | None = None,
    on_start: Callable[[int | None], None] | None = None,
) -> Probe:
    """Run the test command once and say whether it can judge a candidate."""
    result, report = run_tests(command, tree, timeout_s, space, on_start=on_start, head=head)
    problem = _problem(command, result, report, tree)
    builds_nothing = problem is not None and problem == _builds_nothing(
        command, result, report, tree
    )
    return Probe(result, report, problem, _warning(report), builds_nothing)


def _builds_nothing(
    command: str, result: CommandResult, report: TestReport | None, tree: Path
) -> str | None:
    if report is None or report.collected or not report.collect_errors:
        return None
    why = nothing_builds(report, result.full_output, tree)
    return (
        f"the test command `{command}`: nothing runs on the unmodified code: {why}" if why else None
    )


def _problem(
    command: str, result: CommandResult, report: TestReport | None, tree: Path
) -> str | None:
    where = f"the test command `{command}`"
    fix = "fix [checks] test in selfforge.toml"
    last = (result.output.strip().splitlines() or [""])[-1].strip()
    nothing_ran = result.exit_code != 0 and (report is None or not report.collected)
    if nothing_ran and (why := cannot_start(result.full_output, tree)):
        return f"{where} could not run: {why}"
    if result.exit_code in (126, 127):
        return f"{where} could not run ({last}); install what it needs or {fix}"
    if result.timed_out:
        return (
            f"{where} did not finish within its timeout on the unmodified code; "
            "raise [checks] timeout_s in selfforge.toml"
        )
    if result.limit:
        return (
            f"{where} hit the sandbox's {result.limit} limit on the unmodified code; "
            "raise it in [sandbox]"
        )
    if report is not None and report.channel_problem:
        return f"{where}: the results channel was misused on the unmodified code: " + (
            f"{report.channel_problem}; {fix}"
        )
    if report is None:
        return (
            f"{where} exited {result.exit_code} without per-test results ({last}); selfforge "
            "needs them to tell a regression (pytest, `python -m unittest -v`, go test, cargo "
            "test, node --test, or a runner that prints TAP or writes JUnit XML, named by "
            '[checks] runner = "tap" or "junit"): ' + fix + OPT_OUT
        )
    if not report.started or not report.finished:
        return f"{where} stopped before pytest finished ({last}); {fix}"
    if report.exitstatus in PYTEST_STATUS:
        return f"{where}: pytest {PYTEST_STATUS[report.exitstatus]} ({last}); {fix}"
    if not report.collected and not report.collect_errors:
        said, looks = no_tests(result.full_output) or (last, "point it at your tests")
        return f"{where} collected no tests ({said}); {looks}, or {fix}{OPT_OUT}"
    if builds_nothing := _builds_nothing(command, result, report, tree):
        return builds_nothing
    wrong = outside(tree, report.imports)
    if wrong:
        name, origin = next(iter(wrong.items()))
        return (
            f"{where} imports `{name}` from {origin}, not from the tree under test; remove "
            "the PYTHONPATH or path setup that points there, or [checks] test that sets it"
        )
    return None


def _warning(report: TestReport | None) -> str | None:
    if report is None:
        return None
    if report.collect_errors:
        first = next(iter(report.collect_errors))
        return (
            f"{len(report.collect_errors)} test module(s) fail to import on the unmodified "
            f"code ({first}); their tests count as failing"
        )
    if report.collected and not report.passed:
        return (
            "no test passes on the unmodified code, so the tests cannot catch a regression; "
            "check [checks] test (does it need files git ignores, or another environment?)"
        )
    return None


def measure(
    lint: str | None,
    test: str | None,
    tree: Path,
    head: str,
    timeout_s: float,
    space: CheckSpace,
    *,
    on_start: Callable[[int | None], None] | None = None,
    say: Callable[[str, float], None] = lambda text, seconds: None,
    required: bool = True,
) -> tuple[Observed, str | None]:
    """Lint and tests on the unmodified tree; (what they saw, a warning for the user)."""
    observed, warning = Observed(), None
    # the unmodified commit is trusted: its runs alone fill the repository's build caches
    space = dataclasses.replace(space, trusted=True)
    for kind, command in (("lint", lint), ("test", test)):
        if command and (missing := missing_program(command, kind)):
            raise (UsageError if kind == "lint" else BaselineError)(missing)  # as below
    if lint:
        result = run_command(lint, tree, timeout_s, space, on_start=on_start, head=head)
        if result.exit_code in (126, 127):
            last = (result.output.strip().splitlines() or [""])[-1].strip()
            raise UsageError(
                f"the lint command `{lint}` could not run ({last}); install what it needs "
                "or fix [checks] lint in selfforge.toml"
            )
        observed.lint = parse_lint(result.full_output, result.exit_code)
        observed.lint_result = result
        say(f"lint: {len(observed.lint)} finding(s)", result.duration_s)
    if test:
        found = probe_tests(test, tree, timeout_s, space, head=head, on_start=on_start)
        # [checks] tests = "none": the user accepted a command judged by its exit code
        opted_out = not required and found.report is None and found.result.exit_code == 0
        if found.problem and not opted_out:
            if found.builds_nothing:
                observed.tests, observed.tests_result = found.report, found.result
                observed.broken = found.problem
                raise BrokenBase(found.problem, observed)
            raise BaselineError(found.problem)
        observed.tests, observed.tests_result = found.report, found.result
        warning = found.warning
        say(f"tests: {found.describe()}", found.result.duration_s)
    return observed, warning


class BaselineError(SelfforgeError):
    """The checks cannot judge a candidate on this repository as configured."""


class BrokenBase(BaselineError):
    """Nothing of the base's suite builds or imports, while its toolchain starts. ``run``
    stops as for any baseline error; ``check`` judges a person's change by the whole
    suite instead (``observed``: what the base showed, ``broken`` set)."""

    def __init__(self, message: str, observed: Observed) -> None:
        super().__init__(message)
        self.observed = observed


__all__ = ["BaselineError", "BrokenBase", "Probe", "SelfforgeError", "measure", "probe_tests"]


# --- the baseline kept between runs --------------------------------------------------

CACHE_MAX_AGE_S = 12 * 3600
CACHE_KEEP = 20  # entries kept; the oldest go first
JUDGE_DIR = Path(__file__).parent


def cache_key(root: Path, commit: str, checks: Any, sandbox: Any, space: CheckSpace) -> str:
    """Everything that decides the baseline's results, hashed."""
    from selfforge.judge.sandbox.bwrap import check_env

    facts = {
        "tree": git.tree_of(root, commit),
        "checks": _plain(checks),
        "sandbox": _plain(sandbox),
        "space": repr(space),
        "judge": _judge_code(),
        "python": _installed(sys.executable),
        "commands": [_installed(str(root / w)) for w in _programs(checks)],
        "env": sorted(check_env(space.env_names).items()),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def load_cached(state: Path, digest: str) -> tuple[Observed, float] | None:
    """The baseline measured under ``digest`` and when, or None (absent, stale, unreadable)."""
    path = state / "baseline-cache" / f"{digest}.json"
    try:
        data = json.loads(path.read_text())
        if time.time() - float(data["at"]) > CACHE_MAX_AGE_S:
            return None
        return _observed(data["observed"]), float(data["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_cached(state: Path, digest: str, observed: Observed) -> None:
    folder = state / "baseline-cache"
    folder.mkdir(parents=True, exist_ok=True)
    record = {"at": time.time(), "observed": _plain(observed)}
    tmp = folder / f".{digest}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(folder / f"{digest}.json")
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    for old in entries[:-CACHE_KEEP]:
        old.unlink(missing_ok=True)


def describe_cached(observed: Observed) -> str:
    """One line of what a baseline saw, for the step line of a cached one."""
    parts = []
    if observed.tests is not None:
        report = observed.tests
        parts.append(
            f"tests: {report.collected} collected, {len(report.passed)} passed, "
            f"{len(report.failing)} failed"
        )
    if observed.lint is not None:
        parts.append(f"lint: {len(observed.lint)} finding(s)")
    return "; ".join(parts) or "no checks"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):  # the directives' pydantic sections
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _observed(data: dict[str, Any]) -> Observed:
    lint = data.get("lint")
    return Observed(
        lint=None if lint is None else [LintFinding(**f) for f in lint],
        lint_result=_result(data.get("lint_result")),
        tests=None if data.get("tests") is None else TestReport(**data["tests"]),
        tests_result=_result(data.get("tests_result")),
        flaky=set(data.get("flaky") or ()),
    )


def _result(data: dict[str, Any] | None) -> CommandResult | None:
    return None if data is None else CommandResult(**data)


@functools.cache
def _judge_code() -> str:
    """The judge's own code, hashed once per process (a resident selfforge restarts when
    any of selfforge's files changes, so its answer is never stale)."""
    digest = hashlib.sha256()
    for path in sorted(JUDGE_DIR.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _programs(checks: Any) -> list[str]:
    words = f"{getattr(checks, 'test', '') or ''} {getattr(checks, 'lint', '') or ''}".split()
    return [w for w in words if w.startswith("/") or "/" in w]


def _installed(program: str) -> str:
    """A program and what it runs with: its mtime, and its environment's packages'."""
    path = Path(program)
    try:
        stamp = [str(path.resolve()), path.stat().st_mtime_ns]
    except OSError:
        return program
    for venv in (path.parent.parent, Path(sys.prefix)):
        for packages in venv.glob("lib/python*/site-packages"):
            stamp.append(packages.stat().st_mtime_ns)
    return json.dumps(stamp)
