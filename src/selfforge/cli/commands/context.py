"""index and map: build the codebase index, and show the repo map and file choice."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from selfforge.errors import UsageError
from selfforge.repo.workspace import Workspace
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (default: here).")


def register(app: typer.Typer) -> None:
    app.command(name="index")(index_command)
    app.command(name="map")(map_command)


def _state_dir(repo: Path) -> tuple[Path, Path]:
    from selfforge.context.files import git_root

    root = git_root(repo)
    workspace = Workspace(root)
    workspace.prepare()  # creates .selfforge/ and keeps it out of git
    return root, workspace.state


def index_command(repo: Path = RepoOpt) -> None:
    """Build or update the codebase index in .selfforge/index.db."""
    from selfforge.context.index import open_index

    root, state = _state_dir(repo)
    index = open_index(state)
    try:
        stats = index.update(root)
    finally:
        index.close()
    console.print(
        f"indexed {stats.files} files ({stats.parsed} parsed, {stats.unchanged} unchanged, "
        f"{stats.skipped} skipped, {stats.removed} removed), {stats.definitions} definitions "
        f"in {stats.seconds:.2f}s"
    )


def map_command(
    repo: Path = RepoOpt,
    tokens: int = typer.Option(1024, "--tokens", help="Token budget for the map."),
    task: str = typer.Option("", "--task", help="Rank toward this task; list its files."),
    as_json: bool = typer.Option(False, "--json", help="Print {files, map, tokens} as JSON."),
) -> None:
    """Print the repo map and, with --task, the files chosen for the task, best first."""
    from selfforge.context.build import map_for_task

    if tokens < 1:
        raise UsageError(f"--tokens must be a positive number of tokens, not {tokens}")
    root, state = _state_dir(repo)
    view = map_for_task(root, state_dir=state, token_budget=tokens, task=task)
    if as_json:
        print(json.dumps({"files": view.files, "map": view.text, "tokens": view.tokens}))
        return
    if task.strip():
        console.print("files for the task, best first:")
        for path in view.files:
            console.print(f"  {escape(str(path))}")
        console.print()
    console.print(view.text, end="", markup=False)
