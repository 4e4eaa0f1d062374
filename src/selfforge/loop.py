"""The run: recover, measure the baseline, then one attempt per cycle until a limit.

    lock → recover → baseline → [ next task → attempt → reflect → strategy ]* → report

Everything an attempt does happens in its own worktree (attempt.py); the only change to
the user's branch is the fast-forward of a candidate that passed every gate.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from selfforge import checks, git
from selfforge.attempt import Attempt, AttemptResult, Engine
from selfforge.config import LoadedDirectives
from selfforge.errors import BudgetExceeded, SelfforgeError
from selfforge.gates import Observed, describe_state
from selfforge.journal import Journal
from selfforge.models import Model, ModelError
from selfforge.models.base import AuthError, ModelUnreachable, QuotaExhausted, Request
from selfforge.models.budget import Budget
from selfforge.models.script import default_reply
from selfforge.planner import Backlog, Planner, Task, split_task
from selfforge.report import write_report
from selfforge.roles import Caller, render
from selfforge.selfcheck import LAST_GOOD, is_self_repo, remember_good
from selfforge.ui import Reporter
from selfforge.workspace import Workspace, recover, require_commit

FATAL_MODEL_ERRORS = (AuthError, QuotaExhausted)
# Not a finished run: it ends with exit 1, the CLI's one line naming the host and cause.
RUN_ENDING_MODEL_ERRORS = (*FATAL_MODEL_ERRORS, ModelUnreachable)


@dataclass
class RunOptions:
    cycles: int
    until: float | None = None  # wall-clock deadline (time.time())
    edit_format: str = "search_replace"
    context_window: int = 32_000
    fresh_backlog: bool = False  # goals given on the command line: ignore older tasks


@dataclass
class RunSummary:
    run_id: int
    results: list[AttemptResult] = field(default_factory=list)
    stop_reason: str = ""
    recovered: str = ""
    report_path: Path | None = None
    restart_cycles: int = 0  # selfforge changed itself: continue this many with new code

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)


def run(
    ws: Workspace, loaded: LoadedDirectives, model: Model, options: RunOptions, reporter: Reporter
) -> RunSummary:
    d = loaded.directives
    with ws.locked("selfforge run"), Journal(ws.state / "journal.db") as journal:
        recovered = recover(ws, journal)
        if recovered:
            reporter.info(escape(recovered))
        base = require_commit(ws.root)
        run_id = journal.start_run(
            pid=os.getpid(),
            base_branch=git.current_branch(ws.root),
            base_commit=base,
            model=model.spec,
            goals=d.goals.items,
            land_mode=d.land.mode,
        )
        summary = RunSummary(run_id, recovered=recovered)
        caller = Caller(model, journal, Budget(d.limits.budget_usd, d.limits.budget_tokens), run_id)
        engine = Engine(
            ws,
            journal,
            caller,
            loaded,
            reporter,
            run_id,
            options.edit_format,
            options.context_window,
            lessons_for=lambda task: _lessons(journal, task),
        )
        for kind in ("test", "lint"):
            command = getattr(d.checks, kind)
            if command:
                setattr(d.checks, kind, checks.anchor_command(command, ws.root))
        engine.self_target = is_self_repo(ws.root)
        if engine.self_target and journal.get_meta(LAST_GOOD) is None:
            remember_good(journal, base)  # the code now running is the known good one
        status, summary.stop_reason = "failed", "stopped by an unexpected error"
        try:
            summary.stop_reason = _cycles(engine, options, summary)
            status = "finished"
        except (BudgetExceeded, *FATAL_MODEL_ERRORS) as exc:
            summary.stop_reason, status = f"stopped: {exc.message}", "stopped"
        except KeyboardInterrupt:
            status, summary.stop_reason = "interrupted", "interrupted by the user"
            raise
        except SelfforgeError as exc:  # e.g. a check that cannot run: say why, then stop
            summary.stop_reason = exc.message
            raise
        finally:  # whatever ended the run, the journal says so and nothing is left open
            ws.remove_worktrees()
            journal.end_run(run_id, status, summary.stop_reason)
        summary.report_path = write_report(ws, journal, run_id)
        return summary


def _cycles(engine: Engine, options: RunOptions, summary: RunSummary) -> str:
    d, journal = engine.d, engine.journal
    planner = Planner(
        Backlog(journal), engine.caller if d.role_enabled("plan") else None, d.goals.items
    )
    planner.fresh_only = options.fresh_backlog
    baseline: Observed | None = None
    baseline_commit = ""
    model_errors = 0
    for cycle in range(1, options.cycles + 1):
        if options.until is not None and time.time() >= options.until:
            return "reached the --until time limit"
        base = require_commit(engine.ws.root)
        if baseline is None or base != baseline_commit:
            baseline, baseline_commit = measure_baseline(engine, base), base
        try:
            picked = _one_cycle(engine, planner, cycle, base, baseline)
        except ModelError as exc:
            if isinstance(exc, RUN_ENDING_MODEL_ERRORS):
                raise
            model_errors += 1
            summary.results.extend(_close_errored(journal, engine.run_id, exc))
            engine.reporter.outcome("error", exc.message)
            if model_errors >= 3:
                return f"stopped after {model_errors} model errors in a row: {exc.message}"
            continue
        if picked is None:
            why = f" ({planner.note})" if planner.note else ""
            return f"the backlog is empty: the planner proposed nothing new{why}"
        task, result = picked
        model_errors = 0
        summary.results.append(result)
        engine.reporter.outcome(result.outcome, result.reason)
        _reflect(engine, task, result)
        _next_strategy(engine, planner, task, result)
        if result.landed and result.observed is not None and result.commit:
            baseline, baseline_commit = result.observed, result.commit
        if result.landed and engine.self_target and result.commit:
            remember_good(journal, result.commit)
            if cycle < options.cycles:
                summary.restart_cycles = options.cycles - cycle
                return "selfforge changed itself; the next cycles run the new code"
    return f"reached the cycle limit ({options.cycles})"


def _one_cycle(
    engine: Engine, planner: Planner, cycle: int, base: str, baseline: Observed
) -> tuple[Task, AttemptResult] | None:
    """Pick the next task (planning if needed) and attempt it; None: nothing left."""
    history = [f"{a.outcome}: {a.task} ({a.reason})" for a in engine.journal.attempts(last=10)]
    task = planner.next_task(describe_state(baseline), history)
    if task is None:
        return None
    engine.reporter.attempt(cycle, task.text)
    return task, Attempt(engine, cycle, task.text, base, baseline, task.edit_format).run()


def measure_baseline(engine: Engine, commit: str) -> Observed:
    """Run lint and tests on the unmodified commit, in a worktree of its own."""
    d, ws = engine.d, engine.ws
    path, branch = ws.create_worktree("baseline", commit, f"baseline-{engine.run_id}")
    observed = Observed()
    engine.reporter.begin("baseline")
    try:
        if d.checks.lint:
            result = checks.run_command(
                d.checks.lint, path, d.checks.timeout_s, on_start=ws.note_child_group
            )
            _require_runnable("lint", result)
            observed.lint = checks.parse_lint(result.full_output, result.exit_code)
            observed.lint_result = result
            engine.reporter.step(
                "baseline", None, f"lint: {len(observed.lint)} finding(s)", result.duration_s
            )
        if d.checks.test:
            result, report = checks.run_tests(
                d.checks.test, path, d.checks.timeout_s, on_start=ws.note_child_group
            )
            _require_runnable("test", result)
            if result.timed_out:
                raise SelfforgeError(
                    f"the test command did not finish within {d.checks.timeout_s:g} s on the "
                    "unmodified code; raise [checks] timeout_s in selfforge.toml"
                )
            if report is not None and report.collected and not report.passed:
                engine.reporter.info(
                    "  [yellow]warning[/]: no test passes on the unmodified code, so the "
                    "tests cannot catch a regression; check [checks] test (does it need "
                    "files git ignores, or another environment?)"
                )
            observed.tests, observed.tests_result = report, result
            passed = len(report.passed) if report else None
            detail = (
                f"tests: {passed} of {report.collected} passing"
                if report
                else f"tests: exit {result.exit_code}"
            )
            engine.reporter.step("baseline", None, detail, result.duration_s)
    finally:
        ws.release_worktree(path, branch)
    return observed


def _require_runnable(kind: str, result: checks.CommandResult) -> None:
    """A check that cannot even start (exit 126/127) would reject every candidate."""
    if result.exit_code in (126, 127):
        last = result.output.strip().splitlines()[-1:] or [""]
        raise SelfforgeError(
            f"the {kind} command `{result.command}` could not run ({last[0].strip()}); "
            f"install what it needs or fix [checks] {kind} in selfforge.toml"
        )


def _lessons(journal: Journal, task: str) -> list[str]:
    return [
        a.lesson if a.lesson else f"{a.task!r} was {a.outcome}: {a.reason}"
        for a in journal.similar_attempts(task, limit=3)
    ]


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
            if isinstance(exc, RUN_ENDING_MODEL_ERRORS):
                raise
            lesson = ""
    else:
        lesson = ""
    if not lesson:
        lesson = default_reply(Request(role="reflect", messages=[], hints=hints))
    engine.journal.set_lesson(result.attempt_id, lesson[:1000])


def _next_strategy(engine: Engine, planner: Planner, task: Task, result: AttemptResult) -> None:
    """Decide the task's fate: done, retried, re-instructed, or skipped and split."""
    backlog = planner.backlog
    if result.outcome == "accepted":
        backlog.update(task.id, status="done", attempts=task.attempts + 1)
        return
    failures = task.attempts + 1
    stall_after = engine.d.limits.stall_after
    if (result.outcome == "no_edits" and failures >= 2) or failures >= stall_after:
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
            journal.finish_attempt(attempt.id, outcome="error", reason=exc.message, repairs=0)
            closed.append(AttemptResult(attempt.id, "error", exc.message))
    return closed
