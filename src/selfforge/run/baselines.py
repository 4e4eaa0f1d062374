"""The baseline a candidate is judged against: measured on the unmodified commit in a
worktree of its own (or read from the cache when nothing that decides it changed), and
kept for the next run when a landed change's own checks saw the whole new tree. The run
loop and ``selfforge check`` (check.py) both start here.

In ``check`` no model waits for the base: when its baseline is not cached and two suites
may run at once (``SELFFORGE_JOBS``, else the cores), the judged commit's full test run
starts in a thread, in the check's worktree, while the base's suite runs in the
baseline's; the tests stage takes it (judge/suite_runs.py ``RunAhead``). ``run`` measures
the base first: the proposer's prompt names what fails before the change.
The judge's side of a baseline (measuring it, the probe that it can judge, the cache) is
``judge/baseline.py``."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from selfforge.context import ContextBundle
from selfforge.context.build import build_context, prewarm
from selfforge.context.history import load_history
from selfforge.judge import baseline as judge_baseline
from selfforge.judge import contract
from selfforge.judge.baseline import BrokenBase
from selfforge.judge.rules import syntax, tree_safety
from selfforge.judge.sandbox import setup as judge_setup
from selfforge.judge.sandbox.limits import jobs
from selfforge.judge.suite_runs import RunAhead, RunKey, TestRun, can_run_ahead
from selfforge.judge.verdict import WHOLE_SUITE_PASSES, Observed
from selfforge.repo import git
from selfforge.repo.workspace import Workspace
from selfforge.run.attempt import context_key
from selfforge.run.engine import Engine


def measure_baseline(
    engine: Engine,
    commit: str,
    meanwhile: Callable[[], object] | None = None,
    placed: Callable[[], None] | None = None,
) -> Observed:
    """Run lint and tests on the unmodified commit, in a worktree of its own; stop when
    the tests cannot judge (judge/baseline.py says why). ``meanwhile`` runs in a thread
    while the checks run (work of the attempt that does not depend on their results);
    whatever it raises is ignored, the attempt does that work again. ``placed`` is called
    once the baseline needs no worktree made any more (found in the cache, or its
    worktree checked out): the attempt's, made ahead, waits for it."""
    d, ws = engine.d, engine.ws
    adapter = engine.space.adapter  # the test command's runner, detected once (engine.py)
    if adapter is not None and adapter.trust_note:  # said on every run, cached or not
        engine.reporter.info(f"  [yellow]note[/]: {escape(adapter.trust_note)}")
    digest = judge_baseline.cache_key(ws.root, commit, d.checks, d.sandbox, engine.space)
    cached = judge_baseline.load_cached(ws.state, digest)
    try:
        path = ws.create_worktree("baseline", commit) if cached is None else None
    finally:
        if placed is not None:
            placed()
    if cached is not None:
        observed, at = cached
        ago = time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
        engine.reporter.begin("baseline")
        engine.reporter.step(
            "baseline",
            None,
            f"cached: {judge_baseline.describe_cached(observed)} (measured {ago} on this tree)",
        )
        return observed
    assert path is not None
    engine.reporter.begin("baseline")
    helper = _in_thread(meanwhile)
    try:
        observed, warning = judge_baseline.measure(
            d.checks.lint,
            d.checks.test,
            path,
            commit,
            d.checks.timeout_s,
            engine.space,
            on_start=ws.note_child_group,
            say=lambda text, secs: engine.reporter.step("baseline", None, text, secs),
            required=d.checks.tests != "none",
        )
    finally:
        if helper is not None:
            helper.join()
    if warning:
        engine.reporter.info(f"  [yellow]warning[/]: {escape(warning)}")
    else:  # a warning is shown on every run: measure again rather than keep it quiet
        judge_baseline.save_cached(ws.state, digest, observed)
    return observed


def _in_thread(work: Callable[[], object] | None) -> threading.Thread | None:
    if work is None:
        return None

    def quietly() -> None:
        with contextlib.suppress(Exception):
            work()

    thread = threading.Thread(target=quietly, name="selfforge-prewarm", daemon=True)
    thread.start()
    return thread


def prewarm_attempt(
    engine: Engine,
    commit: str,
    slot: str = "attempt",
    task: str | None = None,
    lessons: list[str] | None = None,
) -> None:
    """The next attempt's worktree checked out at ``commit`` and its context's index,
    graph and history loaded (what ``Attempt.open`` and ``build_context`` do first); with
    a ``task`` known in advance (``--task``) and its ``lessons`` (read from the journal by
    the caller: the journal's connection is not this thread's), the whole context, which
    the attempt takes if it asks for the same."""
    tree = engine.ws.prepare_worktree(slot, commit)
    ready = attempt_context(engine.ws, tree, commit, engine.context_window, task, lessons)
    if ready is not None:
        engine.ready_context = ready


def attempt_context(
    ws: Workspace,
    tree: Path,
    commit: str,
    context_window: int,
    task: str | None = None,
    lessons: list[str] | None = None,
) -> tuple[tuple[object, ...], ContextBundle] | None:
    """The index, graph and history brought up to date for ``tree``; with a known task
    the whole context, with the key ``Attempt.context`` compares."""
    if task is None:
        prewarm(tree, state_dir=ws.state)
        return None
    budget = context_window // 2
    bundle = build_context(
        tree, task, state_dir=ws.state, token_budget=budget, lessons=lessons or []
    )
    return context_key(commit, task, budget, lessons or []), bundle


class Ahead:
    """A run's first attempt, prepared in a thread from the moment the run holds its lock:
    the history read from the repository, the attempt's worktree checked out, then its
    index and (for a known task) its context, while the run sets up, looks up or measures
    the baseline. When the baseline has no worktree yet (a first run), the attempt's is
    made once the baseline's is (``placed``): the baseline's checks wait for theirs and
    nothing waits for the attempt's yet; otherwise at once. ``result`` waits for it.
    ``close`` waits only for a worktree being made and stops the rest: an interrupted run
    is not held up by an index being built, and what that thread then meets is ignored.
    Anything it raises is ignored: the attempt does that work itself. (Its ``git worktree
    add`` and the baseline's take turns: ``Workspace`` serializes worktree operations.)"""

    def __init__(
        self,
        ws: Workspace,
        commit: str,
        context_window: int,
        task: str | None = None,
        lessons: list[str] | None = None,
    ) -> None:
        self._args = (ws, commit, context_window, task, lessons)
        self.ready: tuple[tuple[object, ...], ContextBundle] | None = None
        self._making = threading.Lock()  # held while the worktree is checked out
        self._placed = threading.Event()  # the baseline needs no worktree made any more
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="selfforge-ahead", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        ws, commit, window, task, lessons = self._args
        with contextlib.suppress(Exception):
            git.tree_of(ws.root, commit)  # the baseline cache's key asks for it next
            load_history(ws.root, commit, ws.state)
            if not ws.has_worktree("baseline"):  # a first run checks out both trees anew
                self._placed.wait()
            with self._making:
                if self._closed:
                    return
                tree = ws.prepare_worktree("attempt", commit)
            if not self._closed:
                self.ready = attempt_context(ws, tree, commit, window, task, lessons)

    def placed(self) -> None:
        """The baseline's worktree is made (or not needed): the attempt's may be."""
        self._placed.set()

    def result(self) -> tuple[tuple[object, ...], ContextBundle] | None:
        self._placed.set()
        self._thread.join()
        return self.ready

    def close(self) -> None:
        self._closed = True  # seen by a thread woken next, before it makes anything
        self._placed.set()
        with self._making:  # and by one already past that point, once it has made it
            self._closed = True


def keep_baseline(engine: Engine, base: str, commit: str, observed: Observed) -> None:
    """A landed change's own checks are the next run's baseline when they saw the whole
    new tree: no test changed (the judging run takes the base's tests)."""
    changed = git.git("diff", "--name-only", "--no-renames", base, commit, cwd=engine.ws.root)
    if any(contract.is_infrastructure(p, engine.rule) for p in changed.splitlines()):
        return
    d = engine.d
    digest = judge_baseline.cache_key(engine.ws.root, commit, d.checks, d.sandbox, engine.space)
    judge_baseline.save_cached(engine.ws.state, digest, observed)


def provide_setup(engine: Engine, base: str) -> None:
    """[checks] setup for this base's manifests (installed once, then reused): a run's
    every cycle and a check both, before the baseline."""
    d = engine.d
    assert d.checks.setup is not None
    engine.reporter.begin("setup")
    engine.space = judge_setup.provide(
        engine.ws.root,
        engine.ws.trees,  # its checkouts live with the worktrees, outside the checkout
        base,
        d.checks.setup,
        engine.space,
        d.checks.timeout_s,
        say=lambda text, secs: engine.reporter.step("setup", None, text, secs),
    )


# --- a check's baseline, and its candidate's run meanwhile -------------------------

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
    digest = judge_baseline.cache_key(e.ws.root, base, d.checks, d.sandbox, e.space)
    cold = judge_baseline.load_cached(e.ws.state, digest) is None
    command = d.checks.test
    early = cold and bool(command) and jobs() >= 2 and can_run_ahead(command, e.ws.root, base)
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
