"""init, run, log, show, status, undo, demo."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from selfforge import git
from selfforge.errors import UsageError
from selfforge.journal import Journal
from selfforge.workspace import Workspace

console = Console(highlight=False, soft_wrap=True)
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (default: here).")


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(run)
    app.command()(log)
    app.command()(show)
    app.command()(status)
    app.command()(undo)
    app.command()(demo)
    app.command()(rollback)


def init(repo: Path = RepoOpt, force: bool = typer.Option(False, help="Overwrite.")) -> None:
    """Write selfforge.toml with the detected test and lint commands."""
    from selfforge.config import DIRECTIVES_FILE, render_default
    from selfforge.detect import detect_checks

    root = git.repo_root(repo)
    target = root / DIRECTIVES_FILE
    if target.exists() and not force:
        raise UsageError(f"{target} exists; edit it, or pass --force to overwrite it")
    test, lint = detect_checks(root, portable=True)  # the file is shared: no local paths
    goals = ["All tests pass", "No lint errors"] if lint else ["All tests pass"]
    target.write_text(render_default(test, lint, goals), encoding="utf-8")
    out = console.print
    out(f"wrote {target}")
    out(f"  test: {escape(test or '(none found: set [checks] test)')}")
    out(f"  lint: {escape(lint or '(none found: set [checks] lint)')}")
    out("Edit the goals, then commit the file (selfforge lands changes only onto a clean tree):")
    out(f"  git add {DIRECTIVES_FILE} && git commit -m 'selfforge directives' && selfforge run")


def run(
    repo: Path = RepoOpt,
    goal: list[str] = typer.Option(
        None, "--goal", help="A goal (repeatable); replaces the directives' goals for this run."
    ),
    cycles: int = typer.Option(None, min=1, help="Attempts to make (default: [limits])."),
    max_repairs: int = typer.Option(
        None, "--max-repairs", min=0, help="Repair rounds per attempt (default: [limits])."
    ),
    model: str = typer.Option(None, help="PROVIDER:MODEL[@BASE_URL] or script:PATH."),
    land: str = typer.Option(None, help="merge (fast-forward when safe) or branch."),
    until: str = typer.Option(None, help="Stop starting attempts after this long, e.g. 2h, 30m."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary only."),
) -> None:
    """Run the improvement loop on a repository."""
    from selfforge.session import start_run

    summary = start_run(
        repo,
        goals=goal or None,
        cycles=cycles,
        max_repairs=max_repairs,
        model=model,
        land=land,
        until=until,
        quiet=as_json,
    )
    if as_json:
        print(json.dumps(summary, indent=2))


def log(repo: Path = RepoOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """Attempts, newest last."""
    with _journal(repo) as journal:
        attempts = journal.attempts()
        calls = {a.id: journal.calls(a.id) for a in attempts} if attempts else {}
        totals = journal.totals()
    if as_json:
        rows = []
        for a in attempts:
            row = a.to_json()
            row["tokens"] = sum(c["input_tokens"] + c["output_tokens"] for c in calls[a.id])
            row["cost_usd"] = sum(c["cost_usd"] or 0 for c in calls[a.id])
            rows.append(row)
        print(json.dumps(rows, indent=2))
        return
    table = Table("id", "run", "outcome", "task", "reason", "result", "tokens")
    styles = {"accepted": "green", "rejected": "red", "error": "red", "no_edits": "yellow"}
    for a in attempts:
        where = (a.commit or "")[:10] if a.landed else (a.branch or "")
        if a.reverted_by:
            where += f" (undone by {a.reverted_by[:10]})"
        tokens = sum(c["input_tokens"] + c["output_tokens"] for c in calls[a.id])
        outcome = f"[{styles.get(a.outcome or '', 'white')}]{a.outcome}[/]"
        table.add_row(
            str(a.id),
            str(a.run_id),
            outcome,
            a.task[:50],
            (a.reason or "")[:70],
            where,
            str(tokens),
        )
    console.print(table)
    console.print(
        f"{totals.attempts} attempt(s); {totals.input_tokens + totals.output_tokens} "
        f"tokens; ${totals.cost_usd:.4f}"
    )


def show(
    attempt: int = typer.Argument(..., help="Attempt id (see `selfforge log`)."),
    repo: Path = RepoOpt,
) -> None:
    """One attempt: task, prompts, responses, checks, diff."""
    with _journal(repo) as journal:
        record = journal.attempt(attempt)
        if record is None:
            raise UsageError(f"no attempt {attempt}; `selfforge log` lists them")
        calls, check_rows = journal.calls(attempt), journal.checks(attempt)
    out = console.print
    out(f"[bold]attempt {record.id}[/] (run {record.run_id}, cycle {record.cycle})")
    out(f"task:    {record.task}")
    out(f"outcome: {record.outcome} after {record.repairs} repair(s): {record.reason}")
    out(f"commit:  {record.commit or '-'}   branch: {record.branch or '-'}")
    out(f"lesson:  {record.lesson or '-'}")
    for call in calls:
        out(
            f"\n[bold cyan]── {call['role']} ({call['model']}, {call['input_tokens']}→"
            f"{call['output_tokens']} tokens, {call['latency_s'] or 0:.2f}s)[/]"
        )
        out("[dim]prompt:[/]")
        out(call["prompt"] or "", markup=False)
        out("[dim]response:[/]")
        out(
            call["response"] if call["response"] is not None else f"error: {call['error']}",
            markup=False,
        )
    for row in check_rows:
        mark = "[green]pass[/]" if row["passed"] else "[red]fail[/]"
        out(
            f"\n[bold]── check {row['name']} (round {row['round']}) {mark}[/] "
            f"exit {row['exit_code']} in {row['duration_s'] or 0:.2f}s: {row['command'] or ''}"
        )
        out(row["output"] or "", markup=False)
    if record.diff:
        out("\n[bold]── diff[/]")
        out(record.diff, markup=False)


def status(repo: Path = RepoOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """Run state, totals (tokens, cost) and the lock holder."""
    ws = Workspace(repo)
    holder = ws.lock_holder() if ws.lock_is_held() else None
    info: dict[str, Any] = {
        "repo": str(ws.root),
        "running": holder is not None,
        "lock_holder": holder,
        "needs_recovery": ws.needs_recovery(),
    }
    if (ws.state / "journal.db").exists():
        with Journal(ws.state / "journal.db") as journal:
            last = journal.last_run_id()
            info["last_run"] = journal.run_info(last) if last else None
            info.update(dataclasses.asdict(journal.totals()))
            info["cost_usd"] = round(info["cost_usd"], 6)
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return
    out = console.print
    out(f"repository: {ws.root}")
    if holder:
        since = time.ctime(float(holder.get("since") or 0))  # type: ignore[arg-type]
        out(f"running:    yes, pid {holder.get('pid')} since {since}")
    else:
        out("running:    no")
    if ws.needs_recovery():
        out(
            "[yellow]note:[/]       an earlier run stopped without cleaning up; the next "
            "`selfforge run` recovers it (your files are untouched)"
        )
    if not info.get("runs"):
        out("journal:    none yet (run `selfforge run`)")
        return
    last_run = info["last_run"] or {}
    out(
        f"runs:       {info['runs']}; last: {last_run.get('status')} — "
        f"{last_run.get('stop_reason')}"
    )
    outcomes = ", ".join(f"{v} {k}" for k, v in info["outcomes"].items()) or "none"
    out(f"attempts:   {info['attempts']} ({outcomes})")
    out(
        f"model use:  {info['calls']} calls, {info['input_tokens']} in / "
        f"{info['output_tokens']} out tokens, ${info['cost_usd']:.4f}"
    )
    out(f"journal:    {ws.state / 'journal.db'}")


def undo(repo: Path = RepoOpt) -> None:
    """Revert the last landed change with a revert commit."""
    from selfforge.undo import undo_last

    console.print(undo_last(Workspace(repo)))


def demo(
    model: str = typer.Option(None, help="Use this model instead of the recorded replay."),
    replay: bool = typer.Option(
        False, help="Replay the recorded session even if a model is configured."
    ),
    parent: Path = typer.Option(
        None,
        "--dir",
        help="Make the sample project in this folder (default: a new temporary folder).",
    ),
) -> None:
    """Watch selfforge work on a small sample project; no setup or key needed."""
    from selfforge.demo import run_demo

    run_demo(model=model, replay=replay, parent=parent)


def rollback(repo: Path = RepoOpt) -> None:
    """Restore selfforge's last known good version (a new commit; history is kept)."""
    from selfforge.selfcheck import rollback as do_rollback

    console.print(do_rollback(Workspace(repo)))


def _journal(repo: Path) -> Journal:
    ws = Workspace(repo)
    path = ws.state / "journal.db"
    if not path.exists():
        raise UsageError(f"no journal at {path}; run `selfforge run` there first")
    return Journal(path)


__all__ = ["register"]
