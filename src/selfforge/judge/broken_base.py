"""A person's change on a base whose suite does not build: judged by the whole suite.

When nothing of the base's suite builds or imports while its toolchain starts
(judge/baseline.py ``BrokenBase``), no test outcome of the base can tell a regression, so
``selfforge check`` asks more of the change instead of giving up: the judged commit (the
change's code with the base's tests, judge/contract.py) and the change's own suite must
both build, collect and pass entirely. Deleting or weakening a test does not help: the
judged commit runs the base's version of every test. A skipped or xfailed test counts
only when the base's own test file asks for it (a platform ``skipif``, an ``#[ignore]``);
one skipped by code the change added is no pass. For pytest that is known by where the
skip was raised (selfforge's plugin names the files on its stack): a ``pytest.skip()``
in the module under test is the change's even when the test file has a ``skipif`` of
its own; for other runners, by whether the base's test file mentions a skip at all.
``run`` never gets here: a model's proposal on such a base stops at the baseline.
"""

from __future__ import annotations

import re
from pathlib import Path

from selfforge.judge.runners.results import FAILING, TestReport
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.verdict import PASS, WHOLE_SUITE_PASSES, Verdict
from selfforge.repo import git

# What can make a test skip or count as an expected failure, in any runner.
_SKIP_WORDS = re.compile(r"skip|xfail|#\[ignore|\bignore\b|\.todo\b|expectedFailure", re.I)
_HIDDEN = ("skipped", "xfailed")


def judged_gate(
    tree: Path,
    base: str,
    diff: str,
    report: TestReport | None,
    result: CommandResult,
    code: frozenset[str] = frozenset(),
) -> Verdict:
    """The base's tests on the change's code: everything builds and passes; a test is
    skipped only where the base's test file asks for it. ``code``: the files the judged
    commit holds in the change's version (its code, not the base's tests)."""
    verdict = _whole(report, result, "on the change's code")
    if not verdict.ok or report is None:
        return verdict
    added_skips = any(_SKIP_WORDS.search(line) for line in _added_lines(diff))
    hidden = [
        f"{t}: {outcome}{_raised_in(report.skip_origins.get(t))}"
        for t, outcome in sorted(report.outcomes.items())
        if outcome in _HIDDEN and not _base_skips(tree, base, t, report, code, added_skips)
    ]
    # a module skipped as it was collected: its tests are not in the report at all
    hidden += [
        f"{module}: skipped as a whole{_raised_in(origins)}"
        for module, origins in sorted(report.skipped_modules.items())
        if not _base_made(tree, base, origins, code, module.split("::")[0])
    ]
    return _hidden(hidden, "by code the change added, not by the base's tests")


def own_gate(judged: TestReport | None, own: TestReport | None, result: CommandResult) -> Verdict:
    """The change's own suite, its tests as it left them: everything builds and passes;
    nothing is skipped that the base's tests did not skip on the same code."""
    verdict = _whole(own, result, "in the change's own suite")
    if not verdict.ok or own is None:
        return verdict
    before = judged.outcomes if judged is not None else {}
    hidden = [
        f"{t}: {outcome}"
        for t, outcome in sorted(own.outcomes.items())
        if outcome in _HIDDEN and before.get(t) not in _HIDDEN
    ]
    return _hidden(hidden, "in the change's own suite, by tests the change added")


def still_builds_nothing(report: TestReport | None) -> bool:
    """The change's code leaves the suite as the base had it: nothing builds or imports."""
    return report is not None and not report.collected and bool(report.collect_errors)


def _whole(report: TestReport | None, result: CommandResult, where: str) -> Verdict:
    if report is None:  # a runner judged by its exit code alone
        if result.exit_code in (0, None):
            return PASS
        return _reject(f"the test command exits {result.exit_code} {where}", result)
    if report.collect_errors:
        module, message = next(iter(report.collect_errors.items()))
        count = len(report.collect_errors)
        return _reject(f"{count} module(s) do not build {where} ({module}: {message})", result)
    if not report.collected:
        return _reject(f"no test ran {where}", result)
    failing = [t for t, o in sorted(report.outcomes.items()) if o in FAILING]
    if failing:
        shown = [f"{t}: {_said(report, t)}" for t in failing]
        return _reject(f"{len(failing)} test(s) fail {where}: " + "; ".join(shown[:3]), result)
    if result.exit_code not in (0, None):
        return _reject(f"the test command exits {result.exit_code} {where}", result)
    return PASS


def _hidden(shown: list[str], how: str) -> Verdict:
    if not shown:
        return PASS
    reason = f"{WHOLE_SUITE_PASSES}: {len(shown)} test(s) skipped {how}: " + "; ".join(shown[:3])
    return Verdict(False, reason, reason + "; make them pass instead.", shown)


def _raised_in(origins: list[str] | None) -> str:
    return f" (raised in {origins[-1]})" if origins else ""


def _reject(what: str, result: CommandResult) -> Verdict:
    reason = f"{WHOLE_SUITE_PASSES}: {what}"
    return Verdict(False, reason, f"{reason}\n\nTest output:\n{result.output}", [what])


def _said(report: TestReport, test: str) -> str:
    message = report.messages.get(test)
    return f"{report.outcomes[test]} ({message[:200]})" if message else report.outcomes[test]


def _base_skips(
    tree: Path, base: str, test: str, report: TestReport, code: frozenset[str], added_skips: bool
) -> bool:
    """Whether the base made ``test`` skip. Where pytest says where the skip came from,
    every file it passed through must be the base's (none the change's code, none that is
    no file), and one of them must say skip; elsewhere (Go, cargo, JS), the base's test
    file must be able to skip it."""
    origins = report.skip_origins.get(test)
    if origins is None:
        return _base_asks(tree, base, test, added_skips)
    return _base_made(tree, base, origins, code, test.split("::")[0])


def _base_made(
    tree: Path, base: str, origins: list[str], code: frozenset[str], own_file: str
) -> bool:
    """A skip whose stack holds none of the change's code (nor code that is no file) and
    passed through a file of the base that says skip (the test's own when it names none
    of the tree's: raised by a library)."""
    if any(path in code or path.startswith("<") for path in origins):
        return False
    return any(_says_skip(tree, base, path) for path in origins or [own_file])


def _says_skip(tree: Path, base: str, path: str) -> bool:
    shown = git.call("show", f"{base}:{path}", cwd=tree)
    return shown.returncode == 0 and bool(_SKIP_WORDS.search(shown.stdout))


def _base_asks(tree: Path, base: str, test: str, added_skips: bool) -> bool:
    """Whether the base's test file of ``test`` can skip it. A test whose id names no file
    of the base (a Go package's import path) counts as the base's own skip unless the
    change adds anything that can skip a test."""
    path = test.split("::")[0]
    if not path or path.startswith(("/", "-")):
        return not added_skips
    shown = git.call("show", f"{base}:{path}", cwd=tree)
    if shown.returncode != 0:
        return not added_skips
    return bool(_SKIP_WORDS.search(shown.stdout))


def _added_lines(diff: str) -> list[str]:
    return [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
