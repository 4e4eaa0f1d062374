"""Acceptance: a candidate lands only if nothing the harness observed regressed.

Every verdict comes from what the checks measured on the baseline and on the candidate,
never from the model's text. Each rejection names what failed: the test, the file and
line, the lint rule.
"""

from __future__ import annotations

import configparser
import fnmatch
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.checks import CommandResult, LintFinding, TestReport, new_findings


@dataclass
class Observed:
    """What the checks saw on one state of the tree (the baseline or a candidate)."""

    lint: list[LintFinding] | None = None
    lint_result: CommandResult | None = None
    tests: TestReport | None = None
    tests_result: CommandResult | None = None


@dataclass
class Verdict:
    ok: bool
    reason: str = ""
    feedback: str = ""  # for the model's repair round
    details: list[str] = field(default_factory=list)


PASS = Verdict(True, "all gates passed")


def lint_gate(baseline: Observed, candidate: Observed) -> Verdict:
    if baseline.lint is None or candidate.lint is None:
        return PASS
    if len(candidate.lint) <= len(baseline.lint):
        return PASS  # findings may move or change, but not grow
    fresh = new_findings(baseline.lint, candidate.lint)
    shown = [str(f) for f in fresh[:10]]
    reason = f"lint findings rose from {len(baseline.lint)} to {len(candidate.lint)}: " + (
        "; ".join(shown[:3]) or "see lint output"
    )
    output = candidate.lint_result.output if candidate.lint_result else ""
    feedback = "Your change added lint findings:\n" + "\n".join(shown or [output])
    return Verdict(False, reason, feedback, shown)


def tests_gate(baseline: Observed, candidate: Observed) -> Verdict:
    result = candidate.tests_result
    if result is None:
        return PASS
    if result.timed_out:
        return Verdict(False, "tests timed out", f"The tests did not finish:\n{result.output}")
    base, cand = baseline.tests, candidate.tests
    if base is not None and cand is not None:
        return _compare_reports(base, cand, result)
    base_ok = baseline.tests_result is None or baseline.tests_result.exit_code == 0
    if base_ok and result.exit_code != 0:
        reason = f"tests passed before and fail now (exit {result.exit_code})"
        return Verdict(False, reason, f"The test command failed:\n{result.output}")
    if base is not None and cand is None:
        reason = f"the test run produced no per-test report (exit {result.exit_code})"
        return Verdict(False, reason, f"The test run broke:\n{result.output}")
    return PASS


def _compare_reports(base: TestReport, cand: TestReport, result: CommandResult) -> Verdict:
    broken = sorted(base.passed - cand.passed)
    if broken:
        details = [f"{t}: {_state(cand, t)}" for t in broken]
        reason = f"{len(broken)} test(s) passed before and fail now: " + "; ".join(details[:3])
        feedback = (
            "These tests passed before your change and do not pass now:\n"
            + "\n".join(f"- {d}" for d in details[:20])
            + f"\n\nTest output:\n{result.output}"
        )
        return Verdict(False, reason, feedback, details)
    if len(cand.passed) < len(base.passed):
        reason = f"passing tests dropped from {len(base.passed)} to {len(cand.passed)}"
        return Verdict(False, reason, reason)
    return PASS


def _state(report: TestReport, test: str) -> str:
    outcome = report.outcomes.get(test)
    if outcome is None:
        return "no longer collected"
    message = report.messages.get(test)
    return f"{outcome} ({message})" if message else outcome


def describe_state(baseline: Observed) -> str:
    """What the checks say about the tree now, for the planner and the proposer."""
    lines = []
    if baseline.tests is not None:
        failing = sorted(t for t, o in baseline.tests.outcomes.items() if o in ("failed", "error"))
        lines.append(f"{len(baseline.tests.passed)} of {baseline.tests.collected} tests pass.")
        for test in failing[:10]:
            msg = baseline.tests.messages.get(test, "")
            lines.append(f"Failing: {test} {msg}".rstrip())
    elif baseline.tests_result is not None:
        lines.append(f"The test command exits {baseline.tests_result.exit_code}.")
    if baseline.lint is not None:
        lines.append(f"{len(baseline.lint)} lint finding(s).")
        lines.extend(f"Lint: {f}" for f in baseline.lint[:10])
    return "\n".join(lines) or "No checks are configured."


# --- integrity: the judge stays out of the candidate's reach ----------------------------

TEST_PATTERNS = ("test_*.py", "*_test.py", "tests/*", "*/tests/*", "test/*", "*/test/*")
_WEAKENING = re.compile(
    r"^\+.*(@pytest\.mark\.(skip|skipif|xfail)|pytest\.(skip|xfail)\(|unittest\.skip"
    r"|@skip\b|\bassert\s+True\b)",
    re.M,
)


def is_test_path(path: str) -> bool:
    return any(fnmatch.fnmatch(path, p) for p in TEST_PATTERNS)


def integrity_gate(changed: dict[str, str], diff: str, *, allow_test_edits: bool) -> Verdict:
    """Reject candidates that change how they are judged.

    ``changed`` maps each changed path to its git status letter (A, M, D, R...).
    Adding new tests is welcome; editing, deleting or skipping existing ones is not,
    unless the directives allow test edits.
    """
    problems = []
    for path, status in sorted(changed.items()):
        if not is_test_path(path) or status.startswith("A"):
            continue
        if status.startswith("D"):
            problems.append(f"deletes test file {path}")
        elif not allow_test_edits:
            problems.append(f"edits existing test file {path}")
    for path, text in split_diff(diff).items():
        if is_test_path(path) and _WEAKENING.search(text):
            problems.append(f"adds a skip, xfail or trivially true assertion in {path}")
    if not problems:
        return PASS
    reason = "integrity: the change " + "; ".join(problems)
    feedback = (
        reason + ". Tests are the judge: fix the code, not the tests. New test files are "
        "welcome; do not delete, skip, or weaken existing tests."
    )
    return Verdict(False, reason, feedback, problems)


def collected_gate(baseline: Observed, candidate: Observed) -> Verdict:
    if baseline.tests is None or candidate.tests is None:
        return PASS
    if candidate.tests.collected < baseline.tests.collected:
        reason = (
            f"integrity: collected tests dropped from {baseline.tests.collected} to "
            f"{candidate.tests.collected}"
        )
        return Verdict(False, reason, reason + "; do not remove or deselect tests.")
    return PASS


def split_diff(diff: str) -> dict[str, str]:
    """A git diff split per file (keyed by the new path)."""
    parts: dict[str, str] = {}
    current, lines = None, []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            if current is not None:
                parts[current] = "\n".join(lines)
            current = line.rsplit(" b/", 1)[-1]
            lines = []
        lines.append(line)
    if current is not None:
        parts[current] = "\n".join(lines)
    return parts


def added_test_files(changed: dict[str, str]) -> list[str]:
    """The Python test files a candidate adds."""
    return sorted(
        p
        for p, st in changed.items()
        if st.startswith("A") and p.endswith(".py") and is_test_path(p)
    )


def new_tests_gate(baseline: Observed, report: TestReport | None, result: CommandResult) -> Verdict:
    """A candidate's new tests, run on their own, must pass."""
    if report is None:
        if result.exit_code == 0:
            return PASS
        return Verdict(
            False,
            f"the new tests fail (exit {result.exit_code})",
            f"Your new tests fail:\n{result.output}",
        )
    known = baseline.tests.outcomes if baseline.tests else {}
    failing = sorted(
        t for t, o in report.outcomes.items() if o in ("failed", "error") and t not in known
    )
    if not failing:
        return PASS
    details = [f"{t}: {report.messages.get(t, report.outcomes[t])}" for t in failing]
    reason = f"{len(failing)} new test(s) fail: " + "; ".join(details[:3])
    return Verdict(
        False,
        reason,
        "Your new tests fail:\n" + "\n".join(details[:20]) + f"\n\nTest output:\n{result.output}",
        details,
    )


_PYTEST_SECTIONS = {
    "pytest.ini": ("pytest",),
    "tox.ini": ("pytest",),
    "setup.cfg": ("tool:pytest",),
}


def test_config_gate(worktree: Path, base: str, changed: dict[str, str]) -> Verdict:
    """Reject a change to how pytest runs (addopts, plugins, test paths): the judge's."""
    touched = [p for p in changed if p in _PYTEST_SECTIONS or p == "pyproject.toml"]
    for path in touched:
        before = _pytest_settings(path, _show(worktree, base, path))
        after = _pytest_settings(path, _read(worktree / path))
        if before != after:
            reason = f"integrity: the change edits the pytest configuration in {path}"
            return Verdict(
                False,
                reason,
                reason + "; how the tests run is not yours to change. Fix the code instead.",
                [reason],
            )
    return PASS


def _pytest_settings(path: str, text: str | None) -> object:
    if text is None:
        return None
    if path == "pyproject.toml":
        try:
            return tomllib.loads(text).get("tool", {}).get("pytest")
        except tomllib.TOMLDecodeError:
            return "unparsable"
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return "unparsable"
    return {s: dict(parser[s]) for s in _PYTEST_SECTIONS[path] if parser.has_section(s)}


def _show(worktree: Path, base: str, path: str) -> str | None:
    proc = subprocess.run(
        ["git", "show", f"{base}:{path}"], cwd=worktree, capture_output=True, text=True
    )
    return proc.stdout if proc.returncode == 0 else None


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
