"""plan and export: edit the backlog the run loop works through; export training data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from selfforge.errors import UsageError
from selfforge.journal.store import Journal
from selfforge.repo.workspace import Workspace
from selfforge.ui.consoles import make_console

if TYPE_CHECKING:
    from selfforge.run.planner import Backlog, Task

console = make_console(highlight=False, soft_wrap=True)
err_console = make_console(stderr=True, highlight=False, soft_wrap=True)
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (default: here).")
# Subcommands accept --repo too; left out, they use the one given to `plan` itself.
SubRepoOpt = typer.Option(None, "--repo", help="The git repository (default: here).")

plan_app = typer.Typer(
    help="Show the backlog (open tasks first, in the order they run); edit it with "
    "add, drop and move. `selfforge run` takes the first open task.",
    invoke_without_command=True,
    no_args_is_help=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(plan_app, name="plan")
    app.command(name="export")(export_command)


# --- plan --------------------------------------------------------------------------------


@plan_app.callback()
def plan_show(
    ctx: typer.Context,
    repo: Path = RepoOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the tasks as a JSON array."),
    show_all: bool = typer.Option(False, "--all", help="Also the done, skipped and dropped tasks."),
) -> None:
    """Show the open tasks in the order they run (--all: then done, skipped, dropped)."""
    if ctx.invoked_subcommand is not None:
        return
    with _journal(repo) as journal:
        backlog = _backlog(journal)
        tasks = backlog.all_tasks() if show_all else backlog.open_tasks()
        closed = len(backlog.all_tasks()) - len(backlog.open_tasks())
    rows = _task_rows(tasks)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    more = f" ({closed} closed: selfforge plan --all)" if closed and not show_all else ""
    if not tasks:
        console.print(
            f"no open tasks{more}; add one with: selfforge plan add TEXT"
            if not show_all
            else "the backlog is empty; add a task with: selfforge plan add TEXT"
        )
        return
    table = Table("#", "id", "status", "tries", "task", "note")
    styles = {"open": "bold", "done": "green", "skipped": "yellow", "dropped": "dim"}
    for row in rows:
        status = f"[{styles.get(row['status'], 'white')}]{row['status']}[/]"
        position = str(row["position"] or "")
        table.add_row(
            position,
            str(row["id"]),
            status,
            str(row["attempts"]),
            escape(row["text"]),
            escape(row["note"] or ""),
        )
    console.print(table)
    if more:
        console.print(f"[dim]{more.strip(' ()')}[/]")


@plan_app.command("add")
def plan_add(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="What to do, as you would tell an engineer."),
    top: bool = typer.Option(False, "--top", help="Run it before every other open task."),
    repo: Path | None = SubRepoOpt,
) -> None:
    """Add a task at the end of the open tasks (or first, with --top)."""
    if not text.strip():
        raise UsageError("the task text is empty; say what to do, e.g. selfforge plan add 'Fix X'")
    # Adding is how a user seeds the backlog before the first run, so it may create
    # the journal; the other edits need tasks that already exist.
    with _journal(_repo(ctx, repo), create=True) as journal:
        backlog = _backlog(journal)
        task = backlog.add_first(text.strip()) if top else backlog.add(text.strip(), source="user")
        position = _position(backlog, task.id)
    console.print(f"added task {task.id} at position {position}: {escape(task.text)}")


@plan_app.command("drop")
def plan_drop(
    ctx: typer.Context,
    task_id: int = typer.Argument(..., metavar="ID", help="Task id (see `selfforge plan`)."),
    repo: Path | None = SubRepoOpt,
) -> None:
    """Drop an open task; it stays in the journal with status 'dropped'."""
    with _journal(_repo(ctx, repo)) as journal:
        backlog = _backlog(journal)
        task = _open_task(backlog, task_id)
        backlog.drop(task.id)
    console.print(f"dropped task {task.id}: {escape(task.text)}")


@plan_app.command("move")
def plan_move(
    ctx: typer.Context,
    task_id: int = typer.Argument(..., metavar="ID", help="Task id (see `selfforge plan`)."),
    to: int = typer.Option(..., "--to", help="Its new position among open tasks (1 = next)."),
    repo: Path | None = SubRepoOpt,
) -> None:
    """Move an open task to position N among the open tasks."""
    with _journal(_repo(ctx, repo)) as journal:
        backlog = _backlog(journal)
        task = _open_task(backlog, task_id)
        count = len(backlog.open_tasks())
        if not 1 <= to <= count:
            raise UsageError(
                f"--to {to} is out of range; there are {count} open task(s): use 1..{count}"
            )
        backlog.move(task.id, to)
    console.print(f"moved task {task.id} to position {to}: {escape(task.text)}")


def _repo(ctx: typer.Context, repo: Path | None) -> Path:
    if repo is not None:
        return repo
    parent = ctx.parent.params.get("repo") if ctx.parent is not None else None
    return Path(parent) if parent is not None else Path(".")


def _open_task(backlog: Backlog, task_id: int) -> Task:
    task = backlog.get(task_id)
    if task is None:
        raise UsageError(f"no task {task_id}; `selfforge plan` lists the tasks and their ids")
    if task.status != "open":
        raise UsageError(
            f"task {task_id} is {task.status}; only open tasks can be dropped or moved "
            "(to work on it again: selfforge plan add TEXT)"
        )
    return task


def _position(backlog: Backlog, task_id: int) -> int | None:
    ids = [t.id for t in backlog.open_tasks()]
    return ids.index(task_id) + 1 if task_id in ids else None


def _task_rows(tasks: list[Task]) -> list[dict[str, object]]:
    position = 0
    rows = []
    for task in tasks:
        if task.status == "open":
            position += 1
        rows.append(
            {
                "id": task.id,
                "position": position if task.status == "open" else None,
                "status": task.status,
                "text": task.text,
                "priority": task.priority,
                "attempts": task.attempts,
                "note": task.note,
            }
        )
    return rows


# --- export ------------------------------------------------------------------------------


def export_command(
    fmt: str = typer.Option(
        ...,
        "--format",
        help="sft (accepted edits), dpo (pairs) or traces (exploring proposers' steps).",
    ),
    repo: Path = RepoOpt,
    out: str = typer.Option("-", "--out", help="Write JSONL to this file; - for stdout."),
) -> None:
    """Export the journal's model replies as JSONL training data (sft, dpo or traces)."""
    from selfforge.cli import export

    if fmt not in export.FORMATS:
        raise UsageError(f"--format {fmt!r} is not known; use --format sft, dpo or traces")
    with _journal(repo) as journal:
        records = export.records(journal, fmt)
    if out == "-":
        count = export.write_jsonl(records, sys.stdout)
        err_console.print(f"exported {count} {fmt} record(s)")
        return
    target = Path(out)
    if not target.parent.is_dir():
        raise UsageError(f"--out {out}: directory {target.parent} does not exist; create it first")
    with target.open("w", encoding="utf-8") as stream:
        count = export.write_jsonl(records, stream)
    console.print(f"exported {count} {fmt} record(s) to {escape(str(target))}")


def _backlog(journal: Journal) -> Backlog:
    from selfforge.run.planner import Backlog  # jinja2 and the roles load only when used

    return Backlog(journal)


def _journal(repo: Path, create: bool = False) -> Journal:
    ws = Workspace(repo)
    path = ws.state / "journal.db"
    if not path.exists():
        if not create:
            raise UsageError(
                f"no journal at {path}; run `selfforge run` there first, "
                "or seed the backlog with `selfforge plan add TEXT`"
            )
        ws.prepare()  # creates .selfforge/ and keeps it out of git
    return Journal(path)
