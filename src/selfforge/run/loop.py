"""The run: recover, measure the baseline, then one attempt per cycle until a limit.

    lock → recover → baseline → [ next task → attempt → reflect → strategy ]* → report

Everything an attempt does happens in its own worktree (attempt.py); the only change to
the user's branch is the fast-forward of a candidate that passed every gate.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from selfforge.config import LoadedDirectives
from selfforge.errors import BudgetExceeded, SelfforgeError
from selfforge.journal.lessons import similar_attempts
from selfforge.journal.report import write_report
from selfforge.journal.store import Journal
from selfforge.judge import selfcheck
from selfforge.judge.gates import describe_state
from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.selfcheck import LAST_GOOD, is_self_repo, remember_good
from selfforge.judge.verdict import Observed, Outcome
from selfforge.models import Model, ModelError
from selfforge.models.base import QuotaExhausted
from selfforge.models.policy import ModelFailure, classify
from selfforge.models.script import default_lesson
from selfforge.repo import git
from selfforge.repo.workspace import Workspace, require_commit
from selfforge.roles.caller import render
from selfforge.run.attempt import Attempt, AttemptResult
from selfforge.run.baselines import (
    Ahead,
    keep_baseline,
    measure_baseline,
    prewarm_attempt,
    provide_setup,
)
from selfforge.run.engine import Engine, make_engine
from selfforge.run.executors import Executor
from selfforge.run.parallel import Checked, CheckJob, best_of, make_checker
from selfforge.run.planner import Backlog, Planner, Task, lesson_text, split_task
from selfforge.run.recovery import recover
from selfforge.ui.reporters import Reporter

_JUDGE_LOADED = (selfcheck,)  # the whole judge is loaded now: a landed change to it on disk
# never judges later cycles of this run (the installed code does, to the end)


@dataclass
class RunOptions:
    cycles: int
    until: float | None = None  # wall-clock deadline (time.time())
    edit_format: str = "search_replace"
    context_window: int = 32_000
    fresh_backlog: bool = False  # goals given on the command line: ignore older tasks
    no_sandbox: bool = False  # --no-sandbox: the user's explicit, warned opt-out
    task: str | None = None  # --task: this one task, no planner
    parallel: int = 1  # --parallel N: N candidates per cycle, the best passing one lands
    backend: str = "pool"  # where the N candidates are checked: pool | ray


@dataclass
class RunSummary:
    run_id: int
    results: list[AttemptResult] = field(default_factory=list)
    stop_reason: str = ""
    recovered: str = ""
    report_path: Path | None = None

    @property
    def flaky(self) -> list[str]:
        """Tests whose outcome changed between runs of one tree, in any attempt."""
        found: set[str] = set()
        for result in self.results:
            if result.observed is not None:
                found |= result.observed.flaky
        return sorted(found)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)


def run(
    ws: Workspace, loaded: LoadedDirectives, model: Model, options: RunOptions, reporter: Reporter
) -> RunSummary:
    d = loaded.directives
    if d.sandbox.mode != "off" and not options.no_sandbox and not sandbox.inside():
        sandbox.probe_ahead()  # answered while the journal and the lock are set up
    with ws.locked("selfforge run"), Journal(ws.state / "journal.db") as journal:
        recovered = recover(ws, journal)
        if recovered:
            reporter.info(escape(recovered))
        base = require_commit(ws.root)
        ahead = None  # the first attempt, prepared while the run sets up and measures
        if options.parallel <= 1:
            lessons = _lessons(journal, options.task) if options.task else None
            ahead = Ahead(ws, base, options.context_window, options.task, lessons)
        run_id = journal.start_run(
            pid=os.getpid(),
            base_branch=git.current_branch(ws.root),
            base_commit=base,
            model=model.spec,
            goals=d.goals.items,
            land_mode=d.land.mode,
        )
        summary = RunSummary(run_id, recovered=recovered)
        status, summary.stop_reason = "failed", "stopped by an unexpected error"
        checker = None
        # From the run's row on, whatever ends it (a baseline that cannot run, Ctrl-C
        # while the baseline is measured) closes the row and what the run opened.
        try:
            engine = make_engine(
                ws,
                loaded,
                journal,
                model,
                reporter,
                run_id,
                options.edit_format,
                options.context_window,
                options.no_sandbox,
            )
            engine.lessons_for = lambda task: _lessons(journal, task)
            engine.self_target = is_self_repo(ws.root)
            if engine.self_target and journal.get_meta(LAST_GOOD) is None:
                remember_good(journal, base, ws.root)  # the code now running is the known good one
            if options.parallel > 1:
                checker = make_checker(
                    options.backend, options.parallel, ws.lock_fd, engine.self_target
                )
            summary.stop_reason = _cycles(engine, options, summary, checker, ahead)
            status = "finished"
        except (BudgetExceeded, QuotaExhausted) as exc:
            summary.stop_reason, status = f"stopped: {exc.message}", "stopped"
        except ModelFailure as exc:  # the model cannot be used at all: say so, exit 1
            summary.stop_reason, status = exc.message, "failed"
            raise
        except KeyboardInterrupt:
            status, summary.stop_reason = "interrupted", "interrupted by the user"
            raise
        except SelfforgeError as exc:  # e.g. a check that cannot run: say why, then stop
            summary.stop_reason = exc.message
            raise
        finally:  # whatever ended the run, the journal says so and nothing is left open
            if checker is not None:
                checker.close()  # before the worktrees go: no check still runs in one
            if ahead is not None:
                ahead.close()  # nor a worktree still being made
            ws.remove_worktrees()
            journal.end_run(run_id, status, summary.stop_reason, left_open=Outcome.ERROR)
        summary.report_path = write_report(ws, journal, run_id)
        return summary


def _cycles(
    engine: Engine,
    options: RunOptions,
    summary: RunSummary,
    checker: Executor[CheckJob, Checked] | None = None,
    ahead: Ahead | None = None,
) -> str:
    d, journal = engine.d, engine.journal
    plans = d.role_enabled("plan") and options.task is None  # --task: no planner
    planner = Planner(Backlog(journal), engine.caller if plans else None, d.goals.items)
    planner.fresh_only = options.fresh_backlog
    if plans and d.goals.measured:  # measured goals: the plan is given their profiles
        planner.numbers = functools.partial(_profiles, engine)
    if options.task is None:
        return _run_cycles(engine, options, summary, checker, planner, ahead)
    # --task is this run's only work: a row of its own (however often it was given before),
    # closed when the run ends, so a later plain `run` never picks it up.
    task = planner.backlog.add(options.task, source="task")
    planner.created.add(task.id)
    try:
        return _run_cycles(engine, options, summary, checker, planner, ahead)
    finally:
        if (row := planner.backlog.get(task.id)) is not None and row.status == "open":
            planner.backlog.update(task.id, status="dropped", note=TASK_ONCE)


def _profiles(engine: Engine) -> str:
    """The measured goals' measures profiled on the code now (measure/profile.py)."""
    from selfforge.measure.profile import for_planner

    engine.reporter.info("  profiling the measured goals' measures for the plan")
    return for_planner(engine.ws, engine.d, engine.space, require_commit(engine.ws.root))


TASK_ONCE = "given with --task: attempted in that run only, not kept for later runs"


def _run_cycles(
    engine: Engine,
    options: RunOptions,
    summary: RunSummary,
    checker: Executor[CheckJob, Checked] | None,
    planner: Planner,
    ahead: Ahead | None = None,
) -> str:
    journal = engine.journal
    baseline: Observed | None = None
    baseline_commit = ""
    model_errors = 0
    for cycle in range(1, options.cycles + 1):
        if options.until is not None and time.time() >= options.until:
            return "reached the --until time limit"
        base = require_commit(engine.ws.root)
        if engine.d.checks.setup:
            provide_setup(engine, base)
        if baseline is None or base != baseline_commit:
            # A single attempt's worktree and context are made while the baseline runs:
            # the first cycle's since the run began (``ahead``), a later one's meanwhile.
            meanwhile = None
            if checker is None and ahead is None:
                task = options.task  # known now: its whole context is built meanwhile
                lessons = engine.lessons_for(task) if task is not None else None
                meanwhile = functools.partial(
                    prewarm_attempt, engine, base, task=task, lessons=lessons
                )
            placed = ahead.placed if ahead is not None else None
            baseline = measure_baseline(engine, base, meanwhile, placed)
            baseline_commit = base
        if ahead is not None:
            if (ready := ahead.result()) is not None:
                engine.ready_context = ready
            ahead = None
        try:
            picked = _one_cycle(engine, planner, cycle, base, baseline, options, checker)
        except ModelError as exc:
            _stop_if_fatal(exc, engine)
            model_errors += 1
            summary.results.extend(_close_errored(journal, engine.run_id, exc))
            engine.reporter.outcome(Outcome.ERROR, exc.message)
            if model_errors >= 3:
                return f"stopped after {model_errors} model errors in a row: {exc.message}"
            continue
        if picked is None:
            if options.task is not None:
                return "the task was not done: it was skipped after repeated failures"
            why = f" ({planner.note})" if planner.note else ""
            return f"the backlog is empty: the planner proposed nothing new{why}"
        task, results, result = picked
        model_errors = 0
        summary.results.extend(results)
        for each in sorted(results, key=lambda r: r is result):  # the cycle's own outcome last
            shown = f"candidate {each.candidate}: " if each.candidate else ""
            engine.reporter.outcome(each.outcome, shown + each.reason)
        _reflect(engine, task, result)
        _next_strategy(engine, planner, task, result)
        if result.landed and result.observed is not None and result.commit:
            baseline, baseline_commit = result.observed, result.commit
            keep_baseline(engine, base, result.commit, result.observed)
        if result.landed and engine.self_target and result.commit:
            # The change is on disk, but this process (the installed judge) keeps judging.
            remember_good(journal, result.commit, engine.ws.root)
        if options.task is not None and result.outcome == Outcome.ACCEPTED:
            return "the task landed" if result.landed else "the task was accepted"
    return f"reached the cycle limit ({options.cycles})"


def _one_cycle(
    engine: Engine,
    planner: Planner,
    cycle: int,
    base: str,
    baseline: Observed,
    options: RunOptions,
    checker: Executor[CheckJob, Checked] | None,
) -> tuple[Task, list[AttemptResult], AttemptResult] | None:
    """Pick the next task (planning if needed) and attempt it: once, or as ``--parallel``
    candidates of which the best passing one lands. None: nothing left."""
    history = [f"{a.outcome}: {a.task} ({a.reason})" for a in engine.journal.attempts(last=10)]
    task = planner.next_task(describe_state(baseline), history)
    if task is None:
        return None
    engine.reporter.attempt(cycle, task.text)
    if checker is None:
        result = Attempt(engine, cycle, task.text, base, baseline, task.edit_format).run()
        return task, [result], result
    n = options.parallel
    results, chosen = best_of(
        engine, checker, n, cycle, task.text, base, baseline, task.edit_format
    )
    return task, results, chosen


def _lessons(journal: Journal, task: str) -> list[str]:
    return [lesson_text(a) for a in similar_attempts(journal, task, limit=3)]


def _reflect(engine: Engine, task: Task, result: AttemptResult) -> None:
    hints = {"task": task.text, "outcome": result.outcome, "reason": result.reason}
    if engine.d.role_enabled("reflect"):
        prompt = render(
            "reflect",
            task=task.text,
            outcome=result.outcome,
            reason=result.reason,
            diff=result.diff[:4000],
        )
        try:
            lesson = engine.caller.ask(
                "reflect", prompt, attempt_id=result.attempt_id, hints=hints
            ).content.strip()
        except ModelError as exc:
            _stop_if_fatal(exc, engine)
            lesson = ""
    else:
        lesson = ""
    if not lesson:
        lesson = default_lesson(task.text, result.outcome, result.reason)
    engine.journal.set_lesson(result.attempt_id, lesson[:1000])


def _next_strategy(engine: Engine, planner: Planner, task: Task, result: AttemptResult) -> None:
    """Decide the task's fate: done, retried, re-instructed, or skipped and split."""
    backlog = planner.backlog
    if result.outcome == Outcome.ACCEPTED:
        backlog.update(task.id, status="done", attempts=task.attempts + 1)
        return
    failures = task.attempts + 1
    stall_after = engine.d.limits.stall_after
    if (result.outcome == Outcome.NO_EDITS and failures >= 2) or failures >= stall_after:
        note = f"skipped after {failures} attempt(s); last: {result.reason}"
        backlog.update(task.id, status="skipped", attempts=failures, note=note)
        engine.reporter.info(f"  [yellow]strategy[/]: {escape(note)}")
        reasons = [
            a.reason or "" for a in engine.journal.attempts(engine.run_id) if a.task == task.text
        ]
        steps = split_task(planner, dataclasses.replace(task, attempts=failures), reasons)
        if steps:
            shown = escape("; ".join(step.text for step in steps))
            engine.reporter.info(f"  [yellow]strategy[/]: split into smaller steps: {shown}")
        return
    text = task.text
    in_use = task.edit_format or engine.edit_format
    if result.reason.startswith("edits did not apply") and in_use != "whole_file":
        # Edits that keep missing their place: ask for whole files instead.
        backlog.update(task.id, edit_format="whole_file")
        engine.reporter.info("  [yellow]strategy[/]: retrying with whole-file edits")
    if failures >= 2 and engine.d.role_enabled("diagnose"):
        text = _diagnose(engine, task, result)
        if text != task.text:
            shown = escape(text[:120])
            engine.reporter.info(f"  [yellow]strategy[/]: diagnosed; new instruction: {shown}")
    backlog.update(task.id, attempts=failures, text=text)


def _stop_if_fatal(exc: ModelError, engine: Engine) -> None:
    kind = classify(exc, answered=engine.caller.answered)
    if kind == "stop":
        raise exc
    if kind == "fail":
        raise ModelFailure.from_error(exc, engine.caller.model.spec) from None


def _diagnose(engine: Engine, task: Task, result: AttemptResult) -> str:
    reports = [
        f"Task: {a.task}\nOutcome: {a.outcome}\nReason: {a.reason}\nLesson: {a.lesson}"
        for a in engine.journal.attempts(engine.run_id)
        if a.task == task.text
    ]
    prompt = render("diagnose", instruction=task.text, reports=reports[-3:])
    reply = engine.caller.ask(
        "diagnose", prompt, attempt_id=result.attempt_id, hints={"instruction": task.text}
    )
    return reply.content.strip() or task.text


def _close_errored(journal: Journal, run_id: int, exc: SelfforgeError) -> list[AttemptResult]:
    """Close the attempt a model error cut short (none if it came while planning)."""
    closed = []
    for attempt in journal.attempts(run_id):
        if attempt.outcome is None:
            error = Outcome.ERROR
            journal.finish_attempt(attempt.id, outcome=error, reason=exc.message, repairs=0)
            closed.append(AttemptResult(attempt.id, error, exc.message))
    return closed
