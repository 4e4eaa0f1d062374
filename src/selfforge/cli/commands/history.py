"""log, show, status: what selfforge did, read from the journal.

Everything a user or a model wrote is escaped before Rich renders it, so text in square
brackets (``[checks]``) is shown, not eaten as markup.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from selfforge.errors import UsageError
from selfforge.journal.store import AttemptRecord, Journal
from selfforge.judge.outcome import JOURNALED, Outcome
from selfforge.models.durations import parse_duration
from selfforge.repo.workspace import Workspace
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (default: here).")
_STYLES = {"good": "green", "bad": "red", "unsure": "yellow"}  # by Outcome.tone


def _style(outcome: str | None) -> str:
    """An outcome's colour in ``log`` (white: still open)."""
    return _STYLES[Outcome(outcome).tone] if outcome in JOURNALED else "white"


def log(
    repo: Path = RepoOpt,
    as_json: bool = typer.Option(False, "--json", help="A JSON array, reasons in full."),
    last: int = typer.Option(None, "-n", "--last", min=1, help="Only the last N attempts."),
    outcome: str = typer.Option(
        None, "--outcome", help="Only attempts with this outcome: " + ", ".join(JOURNALED) + "."
    ),
    since: str = typer.Option(
        None, "--since", help="Only attempts started since: 2h, 3d, 90m, or a date 2026-11-20."
    ),
) -> None:
    """Attempts, newest last."""
    if outcome is not None and outcome not in JOURNALED:
        raise UsageError(f"--outcome {outcome!r}: use one of {', '.join(JOURNALED)}")
    since_ts = parse_since(since) if since else None
    with open_journal(repo) as journal:
        attempts = [
            a
            for a in journal.attempts()
            if (outcome is None or a.outcome == outcome)
            and (since_ts is None or a.started_at >= since_ts)
        ]
        attempts = attempts[-last:] if last else attempts
        calls = {a.id: journal.calls(a.id) for a in attempts}
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
    header = ("id", "run", "outcome", "task", "reason", "result", "tokens")
    rows = []
    for a in attempts:
        where = (a.commit or "")[:10] if a.landed else (a.branch or "")
        if a.reverted_by:
            where += f" (undone by {a.reverted_by[:10]})"
        tokens = sum(c["input_tokens"] + c["output_tokens"] for c in calls[a.id])
        # `show ID` and `log --json` have the task and the reason whole
        rows.append(
            (str(a.id), str(a.run_id), a.outcome or "open", _short(a.task, 50),
             _short(a.reason or "", 70), where, str(tokens))
        )  # fmt: skip
    shown = f"{len(attempts)} of {totals.attempts}" if len(attempts) != totals.attempts else ""
    total = (
        f"{shown or totals.attempts} attempt(s); {totals.input_tokens + totals.output_tokens} "
        f"tokens; ${totals.cost_usd:.4f}"
    )
    if not console.is_terminal:  # piped or redirected: columns a script or a pager reads
        print(_plain_columns(header, rows), total, sep="\n")
        return
    table = Table(*header)
    for row in rows:
        styled = f"[{_style(row[2])}]{escape(row[2])}[/]"
        table.add_row(*(escape(cell) for cell in row[:2]), styled, *map(escape, row[3:]))
    console.print(table)
    console.print(total)


def _plain_columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """``log``'s table as plain text: one line per attempt, never wrapped, no box
    drawing; columns aligned with spaces, an empty cell shown as ``-``."""
    lines = [header, *(tuple(cell or "-" for cell in row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def show(
    attempt: str = typer.Argument(
        ..., help="Attempt id (see `selfforge log`), `last`, or -1, -2… counting back."
    ),
    repo: Path = RepoOpt,
    brief: bool | None = typer.Option(
        None,
        "--brief/--prompts",
        help="Outcome, reasons, checks and diff only (the default on a terminal), or with "
        "every prompt and response after them (the default when piped).",
    ),
    steps: bool = typer.Option(
        False, "--steps", help="An exploring proposer's steps in full: each action and output."
    ),
) -> None:
    """One attempt: outcome and reasons, checks, diff, an exploring proposer's steps;
    then prompts and responses."""
    from selfforge.propose import trajectory

    with open_journal(repo) as journal:
        record = resolve_attempt(journal, attempt)
        calls, check_rows = journal.calls(record.id), journal.checks(record.id)
        measured = journal.measurements(record.id)
        explored = trajectory.steps(journal, record.id)
        siblings = [
            a
            for a in journal.attempts(record.run_id)
            if record.candidate and a.cycle == record.cycle and a.candidate
        ]
    brief = console.is_terminal if brief is None else brief
    _show_head(record, siblings)
    _show_checks(record, check_rows, brief)
    if measured:
        from selfforge.journal.report import measurement_line

        console.print("\n[bold]── measured[/]")
        for m in measured:
            console.print(measurement_line(m), markup=False)
    if record.diff:
        console.print("\n[bold]── diff[/]")
        console.print(record.diff, markup=False)
    _show_steps(record.id, explored, full=steps)
    if brief:
        if calls:
            console.print(
                f"\n[dim]{len(calls)} model call(s): "
                f"selfforge show {record.id} --prompts shows each prompt and response[/]"
            )
        return
    for call in calls:
        _show_call(call)


def _show_head(record: AttemptRecord, siblings: list[AttemptRecord]) -> None:
    out = console.print
    out(f"[bold]attempt {record.id}[/] (run {record.run_id}, cycle {record.cycle})")
    if siblings:
        others = "; ".join(
            f"{a.id} (candidate {a.candidate}: {a.outcome or 'open'}"
            + (", landed" if a.landed else "")
            + ")"
            for a in siblings
            if a.id != record.id
        )
        out(
            f"best of {len(siblings)}: candidate {record.candidate} of {len(siblings)}; "
            f"siblings: {escape(others)}"
        )
    out(f"task:    {escape(record.task)}")
    out(
        f"outcome: {escape(record.outcome or 'open')} after {record.repairs} repair(s): "
        f"{escape(record.reason or '')}"
    )
    out(f"commit:  {escape(record.commit or '-')}   branch: {escape(record.branch or '-')}")
    if record.reverted_by:
        out(f"undone:  by {escape(record.reverted_by)}")
    out(f"lesson:  {escape(record.lesson or '-')}")


def _show_checks(record: AttemptRecord, check_rows: list[dict[str, Any]], brief: bool) -> None:
    final_round = max((row["round"] or 0 for row in check_rows), default=0)
    for i, row in enumerate(check_rows):
        # Stages stop at the first failing one: a check followed by another in its round
        # passed, and so did every check of an accepted attempt's last round.
        passed_on = any(later["round"] == row["round"] for later in check_rows[i + 1 :]) or (
            record.outcome == Outcome.ACCEPTED and (row["round"] or 0) == final_round
        )
        verdict = check_label(row, passed_gate=passed_on)
        console.print(
            f"\n[bold]── check {escape(row['name'])} (round {row['round']}) {verdict}[/] "
            f"in {row['duration_s'] or 0:.2f}s: {escape(row['command'] or '')}"
        )
        if not (brief and (row["passed"] or passed_on)):  # brief: what did not pass
            console.print(row["output"] or "", markup=False)


def _show_steps(attempt_id: int, explored: list[Any], full: bool) -> None:
    """An exploring proposer's trajectory: a line per step, or each in full."""
    if not explored:
        return
    console.print(f"\n[bold]── trajectory ({len(explored) - 1} step(s))[/]")
    for step in explored:
        if not full:
            if step.kind != "task":
                console.print(step.headline(), markup=False)
            continue
        console.print(f"\n[bold cyan]{escape(step.headline())}[/]")
        if step.action:
            console.print(step.action, markup=False)
        console.print("[dim]→[/]")
        console.print(step.output, markup=False)
    if not full:
        console.print(f"[dim]selfforge show {attempt_id} --steps shows each in full[/]")


def _show_call(call: dict[str, Any]) -> None:
    out = console.print
    out(
        f"\n[bold cyan]── {escape(call['role'])} ({escape(call['model'] or '')}, "
        f"{call['input_tokens']}→{call['output_tokens']} tokens, "
        f"{call['latency_s'] or 0:.2f}s)[/]"
    )
    out("[dim]prompt:[/]")
    out(call["prompt"] or "", markup=False)
    out("[dim]response:[/]")
    out(
        call["response"] if call["response"] is not None else f"error: {call['error']}",
        markup=False,
    )


def check_label(row: dict[str, Any], *, passed_gate: bool) -> str:
    """pass/fail as the judge saw it. A test run's exit code is not its verdict: tests
    that already failed before the change make it exit 1 though nothing regressed."""
    exit_text = "timed out" if row["timed_out"] else f"exit {row['exit_code']}"
    counts = ", ".join(f"{n} {k}" for k, n in json.loads(row["summary"] or "{}").items())
    facts = f"{exit_text}; {counts}" if counts else exit_text
    if row["passed"] or passed_gate:
        return f"[green]pass[/] ({escape(facts)})"
    if row["name"].startswith("tests") and not row["timed_out"]:
        return f"[yellow]ran[/] ({escape(facts)}; judged against the baseline, see outcome)"
    return f"[red]fail[/] ({escape(facts)})"


def status(
    repo: Path = RepoOpt, as_json: bool = typer.Option(False, "--json", help="As JSON.")
) -> None:
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
    out(f"repository: {escape(str(ws.root))}")
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
    out(f"runs:       {info['runs']}; last: {escape(describe_run(info['last_run'], holder))}")
    outcomes = ", ".join(f"{v} {k}" for k, v in info["outcomes"].items()) or "none"
    out(f"attempts:   {info['attempts']} ({outcomes})")
    out(
        f"model use:  {info['calls']} calls, {info['input_tokens']} in / "
        f"{info['output_tokens']} out tokens, ${info['cost_usd']:.4f}"
    )
    out(f"journal:    {escape(str(ws.state / 'journal.db'))}")


def describe_run(run: dict[str, Any] | None, holder: object) -> str:
    """The last run in words; never a bare None."""
    if not run:
        return "none"
    started = dt.datetime.fromtimestamp(run.get("started_at") or 0).strftime("%Y-%m-%d %H:%M")
    state = run.get("status") or "unknown"
    if state == "running":
        if holder:
            return f"run {run['id']}, running since {started}"
        return f"run {run['id']}, started {started}, stopped without closing its record"
    reason = run.get("stop_reason")
    return f"run {run['id']}, {state} (started {started})" + (f": {reason}" if reason else "")


def resolve_attempt(journal: Journal, text: str) -> AttemptRecord:
    """An id, `last`, or -N (the Nth from the end)."""
    word = text.strip().lower()
    if word in ("last", "latest"):
        word = "-1"
    if not re.fullmatch(r"-?\d+", word):
        raise UsageError(f"attempt {text!r}: give an id (see `selfforge log`), `last`, or -1")
    number = int(word)
    if number < 0:
        recent = journal.attempts(last=-number)
        if len(recent) < -number:
            raise UsageError(f"attempt {text}: the journal holds only {len(recent)} attempt(s)")
        return recent[0]
    record = journal.attempt(number)
    if record is None:
        raise UsageError(f"no attempt {number}; `selfforge log` lists them")
    return record


def parse_since(text: str) -> float:
    """'2h', '3d', '90m', '1h30m' ago, or a date / date-time (local time)."""
    seconds = parse_duration(text)
    if seconds is not None:
        return time.time() - seconds
    try:
        return dt.datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise UsageError(
            f"--since {text!r}: write a duration like 2h, 3d, 90m, or a date like 2026-11-20"
        ) from None


def open_journal(repo: Path) -> Journal:
    ws = Workspace(repo)
    path = ws.state / "journal.db"
    if not path.exists():
        raise UsageError(f"no journal at {path}; run `selfforge run` there first")
    return Journal(path)


def _short(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
