"""The bench's own test runs: the instance's test modules, per-test outcomes via junit XML.

These runs decide FAIL_TO_PASS / PASS_TO_PASS when mining and "solved" after a replay,
independently of the judge being measured.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

PYTHON_WORD = re.compile(r"^python(3(\.\d+)?)?$")
# the same word in a shell command: between blanks or the shell's separators
_PYTHON_IN_SHELL = re.compile(r"(?<![^\s;&|(])python(?:3(?:\.\d+)?)?(?![^\s;&|)])")


@dataclass(frozen=True)
class Suite:
    """How an instance's tests run: the command, the runner that reads its results (and
    the JUnit report it writes), and the setup that installs its dependencies."""

    test_cmd: str
    runner: str = "auto"
    junit: str | None = None
    setup: str | None = None

    @property
    def python(self) -> bool:
        return is_python(self.test_cmd, self.runner)


@dataclass
class TestOutcome:
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed/failed/...
    duration_s: float = 0.0
    exit_code: int | None = None
    output: str = ""
    # False when a test process died before its end (a crash: the tests it had not
    # reported yet are unknown, not failed)
    complete: bool = True

    @property
    def passed(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == "passed"}

    def passes(self, ids: set[str] | list[str]) -> set[str]:
        """Which of ``ids`` (as an instance records them) pass in this run. A parameter
        that embeds the time of the run that recorded it (``test_x[2026-11-26
        12:00:01.123]``) never has that id again: it is the test of the same function
        whose parameter has the same shape here (the judge's own matching, ``same_case``)."""
        return {t for t, o in as_recorded(self.outcomes, ids).items() if o == "passed"}

    def holds(self, ids: set[str] | list[str]) -> bool:
        """Every one of ``ids`` passes in this run (``passes``)."""
        return len(self.passes(ids)) == len(set(ids))


def as_recorded(outcomes: dict[str, str], ids: set[str] | list[str]) -> dict[str, str]:
    """The outcome of each of ``ids`` (as an instance records them) in a run's
    ``outcomes``, where it ran: its own id's, or, for an id that embeds the time of the
    run that recorded it, the one of the same function and parameter shape here."""
    from selfforge.judge.criterion import same_case

    found = {t: outcomes[t] for t in ids if t in outcomes}
    absent = sorted({t for t in ids if t not in outcomes})
    if absent:
        here = same_case(absent, list(outcomes))
        found |= {t: outcomes[here[t]] for t in absent if t in here}
    return found


def resolve_command(test_cmd: str) -> str:
    """`python` in an instance's command means the interpreter running the bench. Only
    those words change: the rest is shell (`d=$(mktemp -d) && ...`) and is kept as is."""
    try:
        words = shlex.split(test_cmd)
    except ValueError:
        return test_cmd
    if not any(PYTHON_WORD.match(w) for w in words):
        return test_cmd
    return _PYTHON_IN_SHELL.sub(lambda _: shlex.quote(sys.executable), test_cmd)


def check_command(test_cmd: str, modules: list[str], runner: str = "auto") -> str:
    """The shell command selfforge's judge runs in the replay clone: pytest on the
    instance's test modules, another language's runner on its whole suite."""
    if not is_python(test_cmd, runner):
        return resolve_command(test_cmd)
    return " ".join([resolve_command(test_cmd), "-q", *(shlex.quote(m) for m in modules)])


def is_python(test_cmd: str, runner: str = "auto") -> bool:
    """Python's runners run the command (by the judge's own detection: the registry)."""
    from selfforge.judge.runners import registry

    if runner != registry.AUTO and not registry.by_name(runner).reports_through_channel:
        return False
    return registry.detect(test_cmd, Path("/nonexistent")).reports_through_channel


def run_tests(
    root: Path,
    suite: Suite | str,
    modules: list[str],
    timeout_s: float,
    *,
    state: Path | None = None,
) -> TestOutcome:
    """Run ``modules`` with ``test_cmd`` (pytest) in ``root``; per-test outcomes by id.

    The code under test is a candidate's (after a replay) or history's: it runs in the
    same sandbox as every check (``judge.sandbox.command.run_command``: no home, no keys, no
    network), never with the user's environment. The junit file is written into the tree
    (the only place the sandbox lets pytest write that selfforge can read afterwards),
    read back as untrusted input and removed, so the clone is left as it was."""
    from selfforge.judge.runners.import_roots import import_roots
    from selfforge.judge.sandbox.command import CheckSpace, run_command
    from selfforge.repo import git

    suite = Suite(suite) if isinstance(suite, str) else suite
    test_cmd = suite.test_cmd
    if not suite.python:
        return _run_other(root, suite, timeout_s, state)
    name = f".selfforge-junit-{secrets.token_hex(8)}.xml"
    xml = root / name
    command = f"{resolve_command(test_cmd)} -q -p no:cacheprovider --junit-xml={name} " + " ".join(
        shlex.quote(m) for m in modules
    )
    space = CheckSpace(repo=root, git_common_dir=git.common_dir(root))
    roots = os.pathsep.join(str(p) for p in import_roots(root))
    try:
        ran = run_command(command, root, timeout_s, space, extra_env={"PYTHONPATH": roots})
        found = junit_outcomes(xml) if _readable(xml) else {}
    finally:
        xml.unlink(missing_ok=True)
    outcomes = {_node_id(root, t): o for t, o in found.items()}
    return TestOutcome(outcomes, ran.duration_s, ran.exit_code, ran.full_output[-4000:])


def _run_other(root: Path, suite: Suite, timeout_s: float, state: Path | None) -> TestOutcome:
    """Go, Rust, JavaScript: the whole suite through the runner's adapter, sandboxed like
    every check (the adapter reads the runner's own output). With a setup, its products
    (``node_modules``) are installed once per set of manifests into ``state`` (judge/
    setup.py, with the network) and shown read-only, as to selfforge's own checks."""
    from selfforge.judge.sandbox import command as runner
    from selfforge.judge.sandbox import setup as judge_setup
    from selfforge.repo import git, trees

    space = runner.CheckSpace(
        repo=root, git_common_dir=git.common_dir(root), runner=suite.runner, junit=suite.junit or ""
    )
    if suite.setup:
        head = git.git("rev-parse", "HEAD", cwd=root).strip()
        where = state or trees.for_repo(root, git.common_dir(root))  # not in the suite's walk
        space = judge_setup.provide(root, where, head, suite.setup, space, timeout_s)
    try:
        ran, report = runner.run_tests(suite.test_cmd, root, timeout_s, space)
    finally:
        _remove_report(root, suite.junit)
    outcomes = dict(report.outcomes) if report is not None else {}
    complete = report is not None and report.finished
    return TestOutcome(
        outcomes, ran.duration_s, ran.exit_code, ran.full_output[-4000:], complete=complete
    )


def _remove_report(root: Path, junit: str | None) -> None:
    """The JUnit file the run wrote into the tree goes (unless the project tracks it):
    the bench's own runs leave the clone as they found it, or selfforge would find the
    working tree dirty and keep the change on a branch."""
    from selfforge.repo import git

    if not junit or Path(junit).is_absolute() or ".." in Path(junit).parts:
        return
    path = root / junit
    if path.is_file() and not git.git("ls-files", "--", junit, cwd=root).strip():
        path.unlink()


MAX_JUNIT_BYTES = 64 * 2**20


def _node_id(root: Path, test_id: str) -> str:
    """junit's ``tests.test_a.Suite::test_x`` as pytest's ``tests/test_a.py::Suite::test_x``:
    the longest leading part of the dotted name that is a file in the tree is the path."""
    classname, _, name = test_id.partition("::")  # a parametrized name may hold "::"
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (root / path).is_file():
            return "::".join([path, *parts[end:], name])
    return test_id


def _readable(path: Path) -> bool:
    """A junit file selfforge will parse: a regular file (no link) of a bounded size."""
    return path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_JUNIT_BYTES


def junit_outcomes(path: Path) -> dict[str, str]:
    """pytest's JUnit file as outcomes by ``classname::name``, read by the judge's own
    parser (bounded, no entities: the tests under measure wrote it); an error counts as
    a failure, a test reported twice (a teardown error) by its worst report."""
    from selfforge.judge.runners.junit import parse_junit as read_junit

    try:
        report = read_junit(path.read_bytes())
    except OSError:
        return {}
    if report is None:
        return {}
    return {
        test.lstrip(":"): "failed" if said == "error" else said
        for test, said in report.outcomes.items()
    }
