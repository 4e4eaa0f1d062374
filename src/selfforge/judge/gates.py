"""Acceptance from observations: lint may not grow, tests may not regress, and the task
must make progress.

Every verdict comes from what the checks measured on the baseline and on the candidate,
never from the model's text. The exit code and the per-test results must agree; a run
that did not finish is no verdict. Each rejection names what failed.
"""

from __future__ import annotations

from selfforge.judge.rules.lint import new_findings
from selfforge.judge.runners.results import TestReport, realign
from selfforge.judge.runners.testids import same_tests
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.verdict import PASS, Criterion, Observed, Verdict


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


def run_gate(result: CommandResult, report: TestReport | None) -> Verdict:
    """Is this test run a verdict at all? It finished, within its limits, and its exit
    code agrees with its per-test results."""
    if result.timed_out:
        return Verdict(False, "tests timed out", f"The tests did not finish:\n{result.output}")
    if result.limit:
        reason = f"the test run hit the {result.limit} limit"
        return Verdict(False, reason, f"{reason}; it was stopped:\n{result.output}")
    if report is not None and report.channel_problem:
        reason = f"the test results cannot be trusted: {report.channel_problem}"
        return Verdict(False, reason, f"{reason}; report results only through the test runner")
    if report is None:
        return PASS  # judged by the exit code alone (no per-test results to agree with)
    if not report.finished:
        reason = f"the test run stopped before it finished (exit {result.exit_code})"
        return Verdict(False, reason, f"{reason}; its results are incomplete:\n{result.output}")
    failing = report.failing
    if result.exit_code == 0 and failing:
        reason = (
            f"the test command exited 0 but {len(failing)} test(s) failed "
            f"({sorted(failing)[0]}): the exit code and the results disagree"
        )
        return Verdict(False, reason, reason)
    if result.exit_code not in (0, None) and not failing:
        reason = (
            f"the test command exited {result.exit_code} but no test failed: the exit code "
            "and the results disagree"
        )
        return Verdict(False, reason, f"{reason}\n{result.output}")
    return PASS


def tests_gate(
    baseline: Observed,
    candidate: Observed,
    criterion: Criterion,
    excused: frozenset[str] = frozenset(),
    diff: str = "",
) -> Verdict:
    """No regression, no fewer tests, no new collection error, and progress when asked.
    ``excused``: tests (and modules whose tests no longer build) a person reviews: those
    the change declares it changes on purpose, or whose expectation it rewrote;
    ``diff``: the change, which may rename what a doctest documents."""
    result = candidate.tests_result
    if result is None:
        return PASS
    verdict = run_gate(result, candidate.tests)
    if not verdict.ok:
        return verdict
    base, cand = baseline.tests, candidate.tests
    if base is None or cand is None:
        return _exit_code_gate(baseline, candidate, result, criterion)
    added = sorted(set(cand.collect_errors) - set(base.collect_errors) - excused)
    if added:
        reason = f"the change makes {added[0]} fail to import: {cand.collect_errors[added[0]]}"
        return Verdict(False, reason, f"{reason}\n\nTest output:\n{result.output}", added)
    flaky = baseline.flaky | candidate.flaky | excused
    verdict = regression_gate(base, cand, flaky, result.output, diff=diff)
    if not verdict.ok:
        return verdict
    verdict = hidden_failure_gate(base, cand, flaky)
    if not verdict.ok:
        return verdict
    if cand.collected < base.collected - len(excused):
        reason = f"integrity: collected tests dropped from {base.collected} to {cand.collected}"
        return Verdict(False, reason, reason + "; do not remove or deselect tests.")
    if any(cand.outcome(t) in ("failed", "error") for t in excused):
        return PASS  # the declared tests' own failures explain the exit code
    return exit_code_gate(baseline, result, cand, flaky)


def hidden_failure_gate(base: TestReport, cand: TestReport, excused: set[str]) -> Verdict:
    """A test that failed on the base and is skipped or xfailed now — its base version,
    by the change's code (a ``pytest.skip`` or a flag a ``skipif`` reads) — is no fix."""
    hidden = sorted(
        t
        for t, was in base.outcomes.items()
        if was in ("failed", "error") and t not in excused and cand.outcome(t) in _HIDDEN
    )
    if not hidden:
        return PASS
    details = [f"{t}: {base.outcomes[t]} → {cand.outcome(t)}" for t in hidden]
    reason = f"{len(hidden)} failing test(s) skipped by the change, not fixed: " + "; ".join(
        details[:3]
    )
    return Verdict(False, reason, reason + "; make them pass instead.", details)


_HIDDEN = ("skipped", "xfailed")


def regression_gate(
    base: TestReport,
    cand: TestReport,
    flaky: set[str],
    output: str,
    *,
    partial: bool = False,
    diff: str = "",
) -> Verdict:
    """No test is worse than on the baseline, flaky ones aside: a test that passed still
    passes (not failed, error, skipped, xfailed, xpassed or gone), and one that was
    skipped or expected to fail does not fail now (a strict xfail that passes fails).
    ``partial``: the run ran only some tests (the ones a change reaches), so only those
    count. A test known by another id in ``cand`` (a
    parameter that embeds the time, a doctest whose item ``diff`` renamed) is compared
    under that id: ``same_tests``."""
    alias = same_tests(base, cand, diff)
    broken = sorted(
        t
        for t, was in base.outcomes.items()
        if t not in flaky
        and (not partial or alias.get(t, t) in cand.outcomes)
        and is_worse(was, cand.outcome(alias.get(t, t)))
    )
    if not broken:
        return PASS
    details = [f"{t}: {base.outcomes[t]} → {state_of(cand, t)}" for t in broken]
    how = (
        "passed before and fail now"
        if all(base.outcomes[t] == "passed" for t in broken)
        else ("did better before")
    )
    reason = f"{len(broken)} test(s) {how}: " + "; ".join(details[:3])
    feedback = (
        "These tests did better before your change:\n"
        + "\n".join(f"- {d}" for d in details[:20])
        + f"\n\nTest output:\n{output}"
    )
    return Verdict(False, reason, feedback, details)


def is_worse(was: str, now: str | None) -> bool:
    """Whether a test's outcome got worse: passed to anything else (gone included), or a
    test that was skipped or expected to fail now failing."""
    if was == "passed":
        return now != "passed"
    return was in ("skipped", "xfailed", "xpassed") and now in ("failed", "error")


def exit_code_gate(
    baseline: Observed,
    result: CommandResult,
    cand: TestReport | None = None,
    flaky: set[str] | frozenset[str] = frozenset(),
) -> Verdict:
    """A suite that exited 0 must still exit 0, even when no test explains why not. A
    failure exit that flaky tests explain (every test that failed is one: its outcome
    changed between runs) decides nothing, as those tests decide nothing."""
    before = baseline.tests_result.exit_code if baseline.tests_result is not None else None
    if before != 0 or result.exit_code in (0, None):
        return PASS
    if cand is not None and cand.failing and cand.failing <= set(flaky):
        return PASS
    reason = (
        f"the test command exited {result.exit_code} where it exited 0 before the change "
        "(no test's outcome explains it: a hook, a warning turned error, a strict xfail?)"
    )
    return Verdict(False, reason, f"{reason}\n\nTest output:\n{result.output}")


def _exit_code_gate(
    baseline: Observed, candidate: Observed, result: CommandResult, criterion: Criterion
) -> Verdict:
    """No per-test results on one side: the exit codes decide."""
    base_result = baseline.tests_result
    base_ok = base_result is None or base_result.exit_code == 0
    if baseline.tests is not None and candidate.tests is None:
        reason = f"the test run produced no per-test results (exit {result.exit_code})"
        return Verdict(False, reason, f"The test run broke:\n{result.output}")
    if result.exit_code != 0:
        why = "passed before and fail now" if base_ok else "still fail"
        reason = f"tests {why} (exit {result.exit_code})"
        return Verdict(False, reason, f"The test command failed:\n{result.output}")
    return PASS


def state_of(report: TestReport, test: str) -> str:
    outcome = report.outcome(test)
    if outcome is None:
        return "no longer collected"
    message = report.messages.get(test)
    return f"{outcome} ({message})" if message else outcome


_FAILING = ("failed", "error")


def own_suite_gate(
    baseline: Observed,
    judged: TestReport | None,
    own: TestReport | None,
    result: CommandResult,
    *,
    person: bool,
    declared: frozenset[str] = frozenset(),
    flaky: frozenset[str] | set[str] = frozenset(),
) -> Verdict:
    """The change's own suite — its tests as it left them, as the user's own command will
    run them from now on — after the base's tests judged its code (``judged``): no test
    fails there that did not fail on the base already; a test the base's version shows
    failing is not hidden by the change's version of it (passing, skipped or xfailed: a
    changed test is no fix) unless the change declares it changes that behaviour; and, for
    a model's proposal, no test that passes is skipped or removed."""
    verdict = run_gate(result, own)
    if not verdict.ok or baseline.tests is None or judged is None or own is None:
        if verdict.ok and own is None and result.exit_code not in (0, None):
            reason = f"the change's own tests fail (exit {result.exit_code})"
            return Verdict(False, reason, f"{reason}:\n{result.output}")
        return verdict
    failing, hidden, dropped = [], [], []
    for t, kind in _own_suite_findings(baseline.tests, judged, own, flaky, declared):
        mine, there = own.outcome(t), judged.outcome(t)
        if kind == "failing":
            mine = own.outcome(_own_id(judged, own, t))
            failing.append(f"{t}: {mine}" + (f" ({own.messages[t]})" if t in own.messages else ""))
        elif kind == "hidden":
            mine = own.outcome(_own_id(judged, own, t))
            why = judged.messages.get(t, there)
            hidden.append(f"{t}: its base version still fails ({why}); the change's is {mine}")
        elif not person:
            mine = own.outcome(_own_id(judged, own, t))
            dropped.append(f"{t}: passes, and the change makes it {mine or 'gone'}")
    if failing:
        reason = f"{len(failing)} test(s) fail in the change's own suite: " + "; ".join(failing[:3])
        return Verdict(False, reason, f"{reason}\n\nTest output:\n{result.output}", failing)
    if hidden:
        reason = (
            f"{len(hidden)} failing test(s) changed, not fixed: "
            + "; ".join(hidden[:3])
            + " (a change meant to change tested behaviour names the tests it changes)"
        )
        return Verdict(False, reason, reason + "; fix the code, not the tests.", hidden)
    if dropped:
        reason = "integrity: the change skips or removes tests that pass: " + "; ".join(dropped[:3])
        return Verdict(False, reason, reason + "; do not skip or delete existing tests.", dropped)
    return PASS


def _own_suite_findings(
    base: TestReport,
    judged: TestReport,
    own: TestReport,
    flaky: frozenset[str] | set[str],
    declared: frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    """What the change's own suite shows, per test (``own_suite_gate``; the judged run's
    id): ``failing`` (it fails there and did not fail on the base already), ``hidden``
    (its base version still fails, the change's does not), ``dropped`` (it passes on the
    judged tree, the change skips or removes it)."""
    alias = realign(list(judged.outcomes), list(own.outcomes))  # ids that embed the time
    found = []
    for t in sorted(set(own.outcomes) - set(alias.values()) | set(judged.outcomes)):
        if t in flaky or alias.get(t, t) in flaky:
            continue
        mine, there, was = own.outcome(alias.get(t, t)), judged.outcome(t), base.outcomes.get(t)
        still_failing = was in _FAILING and there in _FAILING
        if mine in _FAILING and not still_failing:
            found.append((t, "failing"))
        elif still_failing and mine not in _FAILING and mine is not None and t not in declared:
            found.append((t, "hidden"))
        elif there == "passed" and mine in ("skipped", "xfailed", None):
            found.append((t, "dropped"))
    return found


def _own_id(judged: TestReport, own: TestReport, test: str) -> str:
    return realign(list(judged.outcomes), list(own.outcomes)).get(test, test)


def own_suite_suspects(
    base: TestReport, judged: TestReport, own: TestReport, flaky: set[str]
) -> tuple[list[str], list[str]]:
    """The tests of the change's own suite that would reject it, to be rerun before they
    decide: those failing there (own ids) and those whose failing base version it hides
    (judged ids)."""
    found = _own_suite_findings(base, judged, own, flaky)
    failing = [_own_id(judged, own, t) for t, k in found if k == "failing"]
    return failing, [t for t, k in found if k == "hidden"]


def describe_state(baseline: Observed) -> str:
    """What the checks say about the tree now, for the planner and the proposer."""
    lines = []
    tests = baseline.tests
    if tests is not None:
        failing = sorted(tests.failing)
        lines.append(f"{len(tests.passed)} of {tests.collected} tests pass.")
        for test in failing[:10]:
            msg = tests.messages.get(test) or tests.collect_errors.get(
                test.removesuffix("::<collection>"), ""
            )
            lines.append(f"Failing: {test} {msg}".rstrip())
    elif baseline.tests_result is not None:
        lines.append(f"The test command exits {baseline.tests_result.exit_code}.")
    if baseline.lint is not None:
        lines.append(f"{len(baseline.lint)} lint finding(s).")
        lines.extend(f"Lint: {f}" for f in baseline.lint[:10])
    return "\n".join(lines) or "No checks are configured."
