"""`selfforge measure`: the declared measures at a revision, or compared between two."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from selfforge.errors import SelfforgeError
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)
err_console = make_console(stderr=True, highlight=False, soft_wrap=True)

_COLOURS = {"improved": "green", "worse": "red", "unchanged": "dim", "inconclusive": "yellow"}


def register(app: typer.Typer) -> None:
    app.command("measure")(measure_command)


def measure_command(
    rev: str = typer.Argument(
        "HEAD", help="A revision (each measure's value there) or A..B (B compared with A)."
    ),
    repo: Path = typer.Option(Path("."), "--repo", help="The git repository (default: here)."),
    names: list[str] = typer.Option(
        None, "--measure", help="Only this measure (repeatable; default: every one)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the values as JSON."),
    no_sandbox: bool = typer.Option(
        False, "--no-sandbox", help="Run measures without the sandbox (with your rights)."
    ),
    history: bool = typer.Option(
        False,
        "--history",
        help="Measure nothing: list the measurements the journal keeps (run, check and "
        "measure each keep theirs), oldest first.",
    ),
) -> None:
    """Run the [[measures]] of the directives on a revision, in a worktree and the check
    sandbox. With A..B, base and candidate runs alternate until each measure's interval
    of the relative change settles a verdict (improved, unchanged, worse) or its budget
    (max_runs, max_seconds) ends: inconclusive, with the runs that would settle it."""
    from selfforge.config import load_directives
    from selfforge.judge.sandbox import bwrap
    from selfforge.measure.revisions import measure
    from selfforge.measure.sample import show
    from selfforge.repo.workspace import Workspace
    from selfforge.run.engine import check_space

    if history:
        _history(repo, names or [], as_json)
        return
    if not no_sandbox:
        bwrap.probe_ahead()  # answered while the directives are read
    try:
        ws = Workspace(repo)
        d = load_directives(ws.root).directives
        space = check_space(d, ws.root, no_sandbox)
        report = measure(ws, d, space, rev, names or [])
    except SelfforgeError as exc:
        if as_json:
            print(json.dumps({"error": exc.message}))
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}")
        raise typer.Exit(exc.exit_code) from None
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
        return
    if report.candidate is None:
        console.print(f"[dim]at {report.base[:10]}[/]")
        for v in report.values:
            console.print(f"{escape(v.name)}: {escape(show(v.value, v.unit))}")
        return
    console.print(f"[dim]{report.base[:10]} → {report.candidate[:10]}[/]")
    for c in report.comparisons:
        colour = _COLOURS.get(c.verdict, "")
        line = escape(c.describe())
        console.print(f"[{colour}]{line}[/]" if colour else line)
        if c.note:
            console.print(f"  [dim]{escape(c.note)}[/]")


def _history(repo: Path, names: list[str], as_json: bool) -> None:
    """The journal's measurements (the last 200), as lines or JSON."""
    from selfforge.journal.report import measurement_line
    from selfforge.journal.store import Journal
    from selfforge.repo.workspace import Workspace

    try:
        path = Workspace(repo).state / "journal.db"
    except SelfforgeError as exc:
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}")
        raise typer.Exit(exc.exit_code) from None
    rows: list[dict[str, object]] = []
    if path.exists():
        with Journal(path) as journal:
            rows = [m for m in journal.measurements(last=200) if not names or m["name"] in names]
    if as_json:
        print(json.dumps({"measurements": rows}, indent=2))
        return
    if not rows:
        console.print(
            "no measurement is journaled yet: `selfforge measure A..B`, `check` "
            "and a run of a measured goal keep theirs"
        )
    for m in rows:
        console.print(escape(measurement_line(m)))
