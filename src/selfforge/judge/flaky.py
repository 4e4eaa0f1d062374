"""Flaky tests: one failing run decides nothing. A test whose outcome changed between the
base and the judged tree is rerun on both; one that would reject (it passed on the base
and fails now, or fails in the change's own suite) is rerun until its outcome changes, 8
times at most, then in the whole suite; a test whose outcome varies between runs of the
same tree is flaky and decides nothing. Where the runner can (``Adapter.repeats``:
pytest's plugin, ``go test -count``), one run reruns a test itself: a rejection costs one
more start-up of the suite, not eight."""

from __future__ import annotations

from selfforge.judge import gates
from selfforge.judge.candidate import Candidate, Judge
from selfforge.judge.runners.results import TestReport
from selfforge.judge.suite_runs import restore, run_test_command

# At most this many tests of one run are rerun (the rest are judged as they came).
MAX_RERUN_TESTS = 50


def mark_flaky(
    c: Candidate,
    j: Judge,
    command: str,
    cand: TestReport,
    ignore: list[str] | None = None,
    commit: str | None = None,
) -> set[str]:
    """Rerun the tests whose outcome changed, on both trees (the judged one, ``commit``,
    the candidate's own unless told); what varies is flaky. A test that passed on the base
    and fails on the judged tree (a failure that would reject) is rerun there until its
    outcome changes, ``failure_reruns`` times at most: one run that fails is no verdict.
    The files ``ignore`` names stay out of the reruns as they stayed out of the run.
    ``cand``: the run on the judged tree whose outcomes are compared. Returns the flaky
    tests."""
    base = j.baseline.tests
    reruns = j.directives.checks.reruns
    if base is None or reruns <= 0:
        return set()
    changed = sorted(
        t
        for t in set(base.outcomes) | set(cand.outcomes)
        if (base.outcomes.get(t) == "passed") != (cand.outcomes.get(t) == "passed")
        and "<collection>" not in t
        and t in cand.outcomes
        and t in base.outcomes
    )[:MAX_RERUN_TESTS]
    if not changed:
        return set()
    worse = {t for t in changed if base.outcomes[t] == "passed"}
    # Both on the candidate's own tree, restored to each commit in turn (no second
    # checkout), the candidate first: a test that flips on every run shows as flaky.
    times = {t: failure_reruns(reruns) if t in worse else reruns for t in changed}
    flaky = varying(c, j, command, cand, times, commit or c.commit, ignore)
    rest = {t: reruns for t in changed if t not in flaky}
    flaky |= varying(c, j, command, base, rest, c.base, ignore)
    restore(c.tree, c.commit)
    if flaky:
        j.record.flaky(c, sorted(flaky))
    return flaky


# A failure that would reject is rerun until its outcome changes, this many times at most
# (``[checks] reruns`` when larger): a test that fails 1 run in 3 at random fails 8 reruns
# in a row once in 6,561 checks.
FAILURE_RERUNS = 8
# Past this much time of reruns of one kind (the tests alone; the whole suite, to tell a
# flaky test from one that fails in the suite's order only), they stop: a slow suite.
RERUNS_S = 60.0


def failure_reruns(reruns: int) -> int:
    """How many times a failure that would reject is rerun at most (0: reruns are off)."""
    return max(reruns, FAILURE_RERUNS) if reruns > 0 else 0


def varying(
    c: Candidate,
    j: Judge,
    command: str,
    first: TestReport,
    times: dict[str, int],
    commit: str,
    ignore: list[str] | None = None,
) -> set[str]:
    """The tests of ``times`` whose outcome at ``commit`` differs from ``first``'s when
    run again: each rerun alone (with the others still pending) until its outcome
    changes, ``times[t]`` runs at most; one that changed is then confirmed by runs of the
    whole suite (alone, a test may pass where, in the suite's order, it fails every time:
    state an earlier test left), as many at most, until its outcome there changes too. A
    rerun that reports nothing makes nothing flaky."""
    pending = {t: n for t, n in times.items() if n > 0}
    suspects: dict[str, int] = {}
    spent = 0.0
    # Where the runner can, one run reruns each test itself until its outcome changes (it
    # reports that run, or the last): a test it did not report is rerun as below.
    repeat = {t: (n, first.outcomes.get(t, "")) for t, n in pending.items() if n > 1}
    while pending and spent <= RERUNS_S:
        result, again = run_test_command(
            c,
            j,
            "tests:rerun",
            command,
            only=sorted(pending),
            ignore=ignore,
            commit=commit,
            repeat=repeat or None,
        )
        spent += result.duration_s
        outcomes = again.outcomes if again else {}
        runs = again.runs if again else {}  # how many times the run ran each, where >1
        for t in list(pending):
            if outcomes.get(t) != first.outcomes.get(t):
                suspects[t] = times[t]
                del pending[t]
            elif (left := pending[t] - (runs.get(t, 1) if t in repeat else 1)) > 0:
                pending[t] = left
            else:
                del pending[t]
        repeat = {}
    flaky: set[str] = set()
    spent = 0.0
    while suspects and spent <= RERUNS_S:
        result, whole = run_test_command(c, j, "tests:rerun", command, ignore=ignore, commit=commit)
        if whole is None:
            break
        spent += result.duration_s
        for t in list(suspects):
            if whole.outcomes.get(t) != first.outcomes.get(t):
                flaky.add(t)
                del suspects[t]
            elif (left := suspects[t] - 1) > 0:
                suspects[t] = left
            else:
                del suspects[t]
    return flaky


def own_suite_flaky(
    c: Candidate,
    j: Judge,
    command: str,
    judged: TestReport,
    own: TestReport,
    judged_commit: str,
    known: set[str],
) -> set[str]:
    """The change's own suite (``own``, at the candidate's commit) read with the same
    care as the judging run: a test that fails there and did not fail on the base is
    rerun there, and a base test still failing on the judged tree whose changed version
    passes is rerun on the judged tree, each until its outcome changes
    (``failure_reruns``); what varies is flaky. ``known``: flaky already."""
    base = j.baseline.tests
    times = failure_reruns(j.directives.checks.reruns)
    if base is None or not times:
        return set()
    failing, hidden = gates.own_suite_suspects(base, judged, own, known)
    flaky: set[str] = set()
    if failing:
        flaky |= varying(
            c, j, command, own, dict.fromkeys(failing[:MAX_RERUN_TESTS], times), c.commit
        )
    if hidden:
        tests = dict.fromkeys(hidden[:MAX_RERUN_TESTS], times)
        flaky |= varying(c, j, command, judged, tests, judged_commit)
    restore(c.tree, c.commit)
    if flaky:
        j.record.flaky(c, sorted(flaky))
    return flaky
