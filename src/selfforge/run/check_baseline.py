"""The baseline of a ``selfforge check``, and the candidate's suite run meanwhile.

In ``check`` no model waits for the base: when its baseline is not cached and two suites
may run at once (``SELFFORGE_JOBS``, else the cores), the judged commit's full test run
starts in a thread, in the check's worktree, while the base's suite runs in the
baseline's; the tests stage takes it (judge/suite_runs.py ``RunAhead``). ``run`` measures
the base first: the proposer's prompt names what fails before the change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from selfforge.errors import UsageError
from selfforge.judge import baseline_cache, contract
from selfforge.judge.baseline import BrokenBase
from selfforge.judge.rules import syntax, tree_safety
from selfforge.judge.suite_runs import RunAhead, RunKey, TestRun, can_run_ahead
from selfforge.judge.verdict import WHOLE_SUITE_PASSES, Observed
from selfforge.run.attempt import Engine
from selfforge.run.baselines import measure_baseline

Made = tuple[Path, str, dict[str, str]]  # the check's worktree, the commit, what it changes


def baseline_and_candidate(
    e: Engine, base: str, make: Callable[[], Made]
) -> tuple[Observed, Made, dict[RunKey, TestRun]]:
    """The baseline, the candidate (``make``) and the judged commit's full test run made
    meanwhile when the baseline is not cached and two suites may run at once: the check's
    tests stage takes it instead of running it (judge/suite_runs.py RunAhead). Otherwise
    the baseline is measured first, as before: the candidate's files are written after
    the base's build (cargo judges a shared target dir's freshness by mtimes)."""
    d = e.d
    digest = baseline_cache.key(e.ws.root, base, d.checks, d.sandbox, e.space)
    cold = baseline_cache.load(e.ws.state, digest) is None
    command = d.checks.test
    early = cold and bool(command) and _jobs() >= 2 and can_run_ahead(command, e.ws.root, base)
    started = time.time()
    if not early:
        baseline = _measure(e, base)
        made, ran = make(), {}
    else:
        made = make()
        ahead = _start(e, base, made) if made[2] and _may_pass(e, base, made) else None
        try:
            started = time.time()
            baseline = _measure(e, base)
            ran = ahead.join() if ahead is not None else {}
        except BaseException:  # a base that cannot judge, Ctrl-C: the candidate's run too
            if ahead is not None:
                ahead.cancel()
            raise
    if cold and baseline.tests_result is not None:  # journaled: when it ran, beside the rest
        _journal_baseline(e, baseline, started)
    return baseline, made, ran


def _measure(e: Engine, base: str) -> Observed:
    """The base's baseline; one on which nothing of the suite builds (the toolchain
    started) is kept, marked ``broken``: a person's change is then judged by the whole
    suite (judge/broken_base.py) rather than not at all. ``run`` stops there instead."""
    try:
        return measure_baseline(e, base)
    except BrokenBase as broken:
        e.reporter.info(f"  [yellow]note[/]: {escape(broken.message)}")
        e.reporter.info(f"  [yellow]note[/]: {WHOLE_SUITE_PASSES}")
        return broken.observed


def _may_pass(e: Engine, base: str, made: Made) -> bool:
    """No run ahead for a candidate the judge refuses before its tests whatever they say
    (a syntax error, a symlink out of the tree): the refusal would wait for a suite it
    never reads (one whose link loops pytest's collection waits out the timeout)."""
    wt, commit, changed = made
    if not tree_safety.links_gate(wt, base, commit).ok:
        return False
    if not e.d.checks.syntax:
        return True
    return not syntax.check_syntax(wt, changed, before=syntax.at_commit(wt, base))


def _start(e: Engine, base: str, made: Made) -> RunAhead:
    wt, commit, changed = made
    judged = contract.judged_commit(wt, base, commit, changed, e.rule)
    checks = e.d.checks
    assert checks.test
    return RunAhead(wt, judged.commit, commit, checks.test, checks.timeout_s, e.space)


def _journal_baseline(e: Engine, baseline: Observed, started: float) -> None:
    result = baseline.tests_result
    assert result is not None
    report = baseline.tests
    e.journal.record_check(
        run_id=e.run_id,
        attempt_id=None,  # measured before the check's attempt opens; no step of it
        round_=0,
        name="baseline:tests",
        command=result.command,
        exit_code=result.exit_code,
        passed=result.exit_code == 0,
        timed_out=result.timed_out,
        duration_s=result.duration_s,
        output=result.output,
        summary=report.summary() if report is not None else None,
        # the test run was the baseline's last: it ended about when measuring did
        started_at=max(started, time.time() - result.duration_s),
    )


def _jobs() -> int:
    """How many test suites a check may run at once: SELFFORGE_JOBS, else the cores."""
    given = os.environ.get("SELFFORGE_JOBS", "").strip()
    if not given:
        return os.cpu_count() or 1
    if not given.isdigit() or int(given) < 1:
        raise UsageError(
            f"SELFFORGE_JOBS={given!r} is not a number of jobs: set it to 1 (one test suite "
            "at a time) or more, or unset it (the machine's cores)"
        )
    return int(given)
