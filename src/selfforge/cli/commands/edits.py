"""`selfforge apply-edits`: apply one model reply's edits to a directory, all or none."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from selfforge.errors import UsageError

FORMAT_CHOICES = ("auto", "search_replace", "whole_file", "udiff")


def register(app: typer.Typer) -> None:
    app.command("apply-edits")(apply_edits)


def apply_edits(
    root: Annotated[Path, typer.Option("--root", help="Repository (or worktree) to edit.")],
    file: Annotated[
        str, typer.Option("--file", help="File holding the model's reply; - for stdin.")
    ] = "-",
    protected: Annotated[
        list[str] | None,
        typer.Option(
            "--protected",
            help="Gitignore-style glob that must not be edited; adds to the repository's "
            "own [safety] protected.",
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="auto|search_replace|whole_file|udiff")
    ] = "auto",
) -> None:
    """Apply one model response's edits atomically: every edit, or no file changed.

    Exit 0 when every edit applied (changed files are listed); exit 1 when any did not,
    with a message per failed edit that a model can act on.
    """
    from selfforge.edits import apply_response

    if not root.is_dir():
        raise UsageError(f"--root {root} is not a directory; pass the repository to edit.")
    if fmt not in FORMAT_CHOICES:
        raise UsageError(f"--format {fmt} is unknown; use one of {', '.join(FORMAT_CHOICES)}.")
    response = _read_reply(file)
    globs = [*(protected or ()), *_directives_protected(root)]
    result = apply_response(root, response, protected=globs, fmt=fmt)
    if result.ok:
        for path in result.changed:
            typer.echo(path)
        if not result.changed:
            typer.echo(f"{result.n_edits} edit(s) applied; no file content changed.")
        return
    typer.echo(result.feedback())
    # SystemExit, not typer.Exit: the app runs with standalone_mode=False, where click
    # turns typer.Exit into a return value that would be lost.
    raise SystemExit(1)


def _directives_protected(root: Path) -> list[str]:
    """The repository's own `[safety] protected` globs, when it has directives."""
    from selfforge.config import find_directives, load_directives

    if find_directives(root) is None:
        return []
    return load_directives(root).protected  # a broken file is a ConfigError: exit 2


def _read_reply(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    path = Path(file)
    if not path.is_file():
        raise UsageError(f"--file {file} does not exist; pass the file holding the reply, or -.")
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"--file {file} cannot be read: {exc.strerror}.") from None
