"""From command-line options to a run: directives, overrides, the model, the summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from selfforge.config import LoadedDirectives, load_directives
from selfforge.errors import ConfigError, SelfforgeError, UsageError
from selfforge.judge.outcome import Outcome
from selfforge.models import Model, choose_default_spec, from_spec, no_model_message
from selfforge.models.catalog import ModelFacts, model_facts
from selfforge.models.durations import parse_duration
from selfforge.models.generation import Generation, RoleSettings
from selfforge.propose import registry
from selfforge.repo.workspace import Workspace
from selfforge.run.executors import check_backend
from selfforge.run.loop import RunOptions, RunSummary, run
from selfforge.ui.consoles import make_console
from selfforge.ui.progress import JournalingReporter
from selfforge.ui.reporters import (
    ConsoleReporter,
    JsonReporter,
    Reporter,
    SilentReporter,
    close_reporter,
)

console = make_console(highlight=False, soft_wrap=True)


def start_run(
    repo: Path,
    *,
    goals: list[str] | None = None,
    cycles: int | None = None,
    max_repairs: int | None = None,
    model: str | None = None,
    land: str | None = None,
    until: str | None = None,
    quiet: bool = False,
    as_json: bool = False,
    reporter: Reporter | None = None,
    task: str | None = None,
    no_sandbox: bool = False,
    parallel: int = 1,
    backend: str = "pool",
    proposer: str | None = None,
    agent: str | None = None,
    measures: list[str] | None = None,
) -> dict[str, Any]:
    """Run the loop as ``selfforge run`` does; return the JSON summary.

    ``quiet``: no live view and no line per step, only the summary at the end.
    ``as_json``: one JSON event per line on stdout (the summary last), nothing else.
    """
    quiet = quiet or as_json
    if parallel < 1:
        raise UsageError(f"--parallel {parallel}: give the number of candidates, 1 or more")
    check_backend(backend)
    ws = Workspace(repo)
    if task is not None and not task.strip():
        raise UsageError("--task needs the text of the task, e.g. --task 'Fix add()'")
    goals = [task] if task else goals
    loaded = apply_overrides(
        load_directives(ws.root), goals=goals, max_repairs=max_repairs, land=land
    )
    from selfforge.judge.runners import registry

    registry.check_directives(loaded)
    d = loaded.directives
    check_proposer(
        loaded, proposer, parallel=parallel, no_sandbox=no_sandbox, agent=agent, root=ws.root
    )
    if loaded.path is None:
        _use_detected_checks(loaded, ws, quiet)
    if not d.goals.items:
        where = loaded.path or "selfforge.toml"
        raise UsageError(f"no goals: add items under [goals] in {where} or pass --goal TEXT")
    if measures:
        judged_by(loaded, measures, goals)
    require_a_judge(loaded, quiet)
    spec = model or d.model.spec or choose_default_spec()
    if spec is None:
        raise UsageError(no_model_message())
    waits: list[Reporter] = []  # model pacing notes go to whichever reporter is showing
    the_model = build_model(spec, loaded, on_wait=lambda msg: _note_wait(waits, msg))
    facts = model_facts(spec) if not spec.startswith("script:") else None
    options = RunOptions(
        cycles=cycles or d.limits.cycles,
        until=parse_until(until),
        edit_format=choose_edit_format(loaded, spec, facts),
        fresh_backlog=bool(goals),
        no_sandbox=no_sandbox,
        task=task,
        parallel=parallel,
        backend=backend,
        context_window=getattr(the_model, "context_window", None)
        or (facts.context_window if facts else 32_000),
    )
    if not quiet:
        console.print(
            f"selfforge: {escape(str(ws.root))} with [bold]{escape(spec)}[/]; "
            f"{options.cycles} cycle(s), land mode {d.land.mode}"
            + (f"; best of {parallel} candidates per cycle ({backend})" if parallel > 1 else "")
        )
    if no_sandbox or d.sandbox.mode == "off":
        why = "--no-sandbox" if no_sandbox else '[sandbox] mode = "off"'
        Console(stderr=True).print(
            f"[bold yellow]warning[/]: {why}: candidate code runs with your rights (your "
            "files, keys and git state are reachable); remove it to run checks in the sandbox"
        )
    commands = {"lint": d.checks.lint or "", "tests": d.checks.test or ""}
    reporter = reporter or choose_reporter(
        ws, options.cycles, quiet=quiet, as_json=as_json, commands=commands
    )
    waits.append(reporter)
    journaling = JournalingReporter(reporter, ws.state / "journal.db")  # for `serve`
    try:
        summary = run(ws, loaded, the_model, options, journaling)
    except SelfforgeError as exc:  # --json readers learn why the run stopped, too
        if isinstance(reporter, JsonReporter):
            reporter.emit("error", message=exc.message, exit_code=exc.exit_code)
        raise
    except KeyboardInterrupt:
        close_reporter(reporter)
        console.print(
            "\n[yellow]interrupted[/]: the attempt in progress was dropped and "
            "nothing of it landed; your repository is as it was"
        )
        raise SystemExit(130) from None
    finally:
        close_reporter(reporter)
        journaling.close()
    result = summary_json(summary, parallel)
    if isinstance(reporter, JsonReporter):
        reporter.emit("summary", **result)
    elif not as_json:
        print_summary(summary, ws)
    return result


NO_TESTS_FIX = (
    "set [checks] test to the command that runs your tests (`selfforge init` detects it), "
    'or opt out with [checks] tests = "none" (then every change goes to a branch)'
)


def require_a_judge(loaded: LoadedDirectives, quiet: bool = False) -> None:
    """No judge, no landing: without a test command nothing can tell a regression, so a
    run refuses, unless the user opted out; then it warns and lands only to branches."""
    d = loaded.directives
    where = loaded.path.name if loaded.path is not None else "selfforge.toml"
    if d.checks.tests == "none":
        d.land.mode = "branch"
        Console(stderr=True).print(
            f'[bold yellow]warning[/]: [checks] tests = "none" in {where}: no test judges '
            "these changes; each one is kept on a selfforge/ branch, never landed on yours"
        )
        return
    if not (d.checks.test or "").strip():
        raise UsageError(f"{where} names no test command ([checks] test): {NO_TESTS_FIX}")


def choose_reporter(
    ws: Workspace,
    cycles: int,
    *,
    quiet: bool,
    as_json: bool,
    commands: dict[str, str] | None = None,
) -> Reporter:
    """JSON events, nothing, the live view on a terminal, or a plain line per step."""
    if as_json:
        return JsonReporter()
    if quiet:
        return SilentReporter()
    if console.is_terminal and not console.is_dumb_terminal:
        from selfforge.ui.live import LiveReporter

        return LiveReporter(console, cycles, ws.state / "journal.db", commands)
    return ConsoleReporter(console)


def _note_wait(reporters: list[Reporter], message: str) -> None:
    if reporters:
        reporters[-1].info(f"  [dim]{escape(message)}[/]")
    else:  # before the run began: stderr, so --json's stdout stays JSON
        Console(stderr=True, highlight=False).print(f"  [dim]{escape(message)}[/]")


def _use_detected_checks(loaded: LoadedDirectives, ws: Workspace, quiet: bool) -> None:
    """Without a directives file, check with what `selfforge init` would write."""
    from selfforge.judge.runners import registry
    from selfforge.repo.detect import detect_project

    found = detect_project(ws.root, languages=registry.init_found)
    test, lint = found.test, found.lint
    checks = loaded.directives.checks
    checks.test, checks.lint, checks.runner, checks.junit = test, lint, found.results, found.junit
    if not quiet:
        console.print(
            f"[yellow]no selfforge.toml[/]: checking with test = {escape(repr(test))}, "
            f"lint = {escape(repr(lint))} (run `selfforge init` to write and edit them)"
        )


def judged_by(loaded: LoadedDirectives, measures: list[str], goals: list[str] | None) -> None:
    """``--measure NAME``: the measures that judge this run's ``--task`` or ``--goal``s."""
    d = loaded.directives
    if not goals:
        raise UsageError("--measure judges a --task or --goal: give one with it")
    declared = [m.name for m in d.measures]
    unknown = [n for n in measures if n not in declared]
    if unknown:
        where = loaded.path or "selfforge.toml"
        raise UsageError(
            f"--measure {unknown[0]}: no [[measures]] table named so in {where}"
            + (f"; declared: {', '.join(declared)}" if declared else "; declare one first")
        )
    for text in goals:
        d.goals.measured[text] = list(dict.fromkeys(measures))


def apply_overrides(
    loaded: LoadedDirectives, *, goals: list[str] | None, max_repairs: int | None, land: str | None
) -> LoadedDirectives:
    d = loaded.directives
    if goals:
        d.goals.items = goals
    if max_repairs is not None:
        d.limits.max_repairs = max_repairs
    if land is not None:
        if land not in ("merge", "branch"):
            raise UsageError(f"--land must be 'merge' or 'branch', not {land!r}")
        d.land.mode = land  # type: ignore[assignment]
    return loaded


def check_proposer(
    loaded: LoadedDirectives,
    proposer: str | None,
    *,
    parallel: int,
    no_sandbox: bool,
    agent: str | None = None,
    root: Path | None = None,
) -> None:
    """``--proposer`` over [model] proposer, ``--agent`` over [model] agent, each a name
    of propose/registry.py; a proposer that runs commands (exploring, an agent) runs
    only in the sandbox, and one candidate per cycle; an agent's program must be there
    before the run starts."""
    model = loaded.directives.model
    if proposer is not None:
        if registry.word(proposer) is None:
            raise UsageError(f"--proposer {proposer!r}: use {registry.spellings(False)}")
        model.proposer = proposer
    elif registry.word(model.proposer) is None:
        raise ConfigError(
            f"{loaded.where('model', 'proposer')}: bad value for 'model.proposer': use "
            f"{registry.spellings(False)} (got {model.proposer!r})"
        )
    model.agent = agent if agent is not None else model.agent
    entry, argument = registry.chosen(model)
    if entry.ready is not None:  # root: the user's checkout (a cmd: agent's files)
        entry.ready(argument, root or Path.cwd())
    if model.agent and model.proposer != "oneshot":
        raise UsageError(
            f"--agent proposes instead of --proposer {model.proposer}: give one of them"
        )
    if not entry.runs_commands:
        return
    what = f"{entry.about} {argument}" if argument else entry.about
    if parallel > 1:
        raise UsageError(f"{what} makes one candidate per cycle; drop --parallel")
    if no_sandbox or loaded.directives.sandbox.mode == "off":
        raise UsageError(
            f"{what} runs commands only in the sandbox: drop "
            '--no-sandbox / [sandbox] mode = "off", or use --proposer oneshot'
        )


def build_model(
    spec: str, loaded: LoadedDirectives, on_wait: Callable[[str], None] | None = None
) -> Model:
    m = loaded.directives.model
    return from_spec(
        spec,
        requests_per_minute=m.requests_per_minute,
        timeout_s=m.timeout_s,
        max_retries=m.max_retries,
        generation=generation_settings(loaded),
        on_wait=on_wait or (lambda msg: console.print(f"  [dim]{escape(msg)}[/]")),
    )


def generation_settings(loaded: LoadedDirectives) -> Generation:
    m = loaded.directives.model
    per_role = {
        role: RoleSettings(r.max_output_tokens, r.temperature) for role, r in m.per_role.items()
    }
    return Generation(m.max_output_tokens, m.temperature, per_role)


def choose_edit_format(loaded: LoadedDirectives, spec: str, facts: ModelFacts | None) -> str:
    """The directives' format, else the catalog's for this model, else its family's.
    ``facts`` is None for the scripted model, which is written in SEARCH/REPLACE."""
    from selfforge.edits import default_format_for

    configured = loaded.directives.model.edit_format
    if configured != "auto":
        return configured
    if facts is None:
        return "search_replace"
    return facts.edit_format or default_format_for(spec)


def parse_until(text: str | None) -> float | None:
    """'2h', '30m', '90s' or '1h30m' from now."""
    if not text:
        return None
    seconds = parse_duration(text)
    if seconds is None:
        raise UsageError(f"--until {text!r}: write a duration like 2h, 45m, 90s or 1h30m")
    return time.time() + seconds


def print_summary(summary: RunSummary, ws: Workspace) -> None:
    out = console.print
    out("")
    out(f"[bold]run {summary.run_id} finished[/]: {escape(summary.stop_reason)}")
    accepted, rejected, no_edits, errors = (
        summary.count(o)
        for o in (Outcome.ACCEPTED, Outcome.REJECTED, Outcome.NO_EDITS, Outcome.ERROR)
    )
    out(f"  {accepted} accepted, {rejected} rejected, {no_edits} without edits, {errors} errors")
    out(f"  model use: {_spend_text(ws, summary.run_id)}")
    verdict = _format_verdict(summary, ws)
    if verdict:
        out(f"  [bold yellow]verdict[/]: {escape(verdict)}")
    if summary.flaky:
        shown = escape(", ".join(summary.flaky[:10]))
        out(f"  flaky (outcome changed between runs; counted neither way): {shown}")
    for result in summary.results:
        if result.candidate and result.outcome == Outcome.ACCEPTED:
            tried = sum(1 for r in summary.results if r.candidate and r.cycle == result.cycle)
            out(
                f"  best of {tried}: candidate {result.candidate} (attempt {result.attempt_id})"
                f" {'landed' if result.landed else 'was accepted'}"
            )
        if result.outcome == Outcome.ACCEPTED and not result.landed and result.branch:
            branch = escape(result.branch)
            out(f"  kept on branch [bold]{branch}[/]: git merge {branch}")
    out(f"  journal: {escape(str(ws.state / 'journal.db'))}  (selfforge log, selfforge show ID)")
    if summary.report_path:
        out(f"  report:  {escape(str(summary.report_path))}")


def _format_verdict(summary: RunSummary, ws: Workspace) -> str | None:
    from selfforge.journal.store import Journal
    from selfforge.roles.junk import edit_format_verdict

    with Journal(ws.state / "journal.db") as journal:
        spec = str((journal.run_info(summary.run_id) or {}).get("model") or "the model")
    attempts = [(r.outcome == Outcome.NO_EDITS, r.reason or "") for r in summary.results]
    return edit_format_verdict(attempts, spec)


def _spend_text(ws: Workspace, run_id: int) -> str:
    from selfforge.journal.store import Journal

    with Journal(ws.state / "journal.db") as journal:
        cost, tokens = journal.run_spend(run_id)
        info = journal.run_info(run_id) or {}
    took = (info.get("ended_at") or time.time()) - (info.get("started_at") or time.time())
    minutes, seconds = divmod(int(took), 60)
    return f"{tokens:,} tokens, ${cost:.4f}; the run took {minutes}:{seconds:02d}"


def summary_json(summary: RunSummary, parallel: int = 1) -> dict[str, Any]:
    return {
        "run_id": summary.run_id,
        "parallel": parallel,
        "stop_reason": summary.stop_reason,
        "recovered": summary.recovered,
        "report": str(summary.report_path) if summary.report_path else None,
        "flaky": summary.flaky,
        "attempts": [
            {
                "id": r.attempt_id,
                "outcome": r.outcome,
                "reason": r.reason,
                "repairs": r.repairs,
                "commit": r.commit,
                "branch": r.branch,
                "landed": r.landed,
                "cycle": r.cycle,
                "candidate": r.candidate,
            }
            for r in summary.results
        ],
    }
