"""The ``selfforge`` command line: a thin Typer app. Parse, call, print.

Commands live in ``selfforge/commands/<area>.py``; each module defines
``register(app)``. Errors a user can cause are ``SelfforgeError``s and leave as one line
and an exit code (2 usage/directives, 1 anything else); tracebacks only with --debug.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from selfforge.errors import SelfforgeError
from selfforge.exit_codes import document_exit_codes
from selfforge.outstream import ClosedReaderSafe

COMMAND_MODULES: tuple[str, ...] = (
    "selfforge.commands.core",
    "selfforge.commands.edits",
    "selfforge.commands.check",
    "selfforge.commands.context",
    "selfforge.commands.models",
    "selfforge.commands.autonomy",
    "selfforge.commands.bench",
    "selfforge.commands.serve",
)

app = typer.Typer(
    name="selfforge",
    help="Improve a git repository toward written goals, one checked commit at a time.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text shows [limits] and [@BASE_URL] literally
)
err_console = Console(stderr=True, soft_wrap=True)
_state = {"debug": False}


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"selfforge {version('selfforge')}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    _version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    _state["debug"] = debug


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)
document_exit_codes(app)


def main() -> None:
    debug = "--debug" in sys.argv
    stdout = sys.stdout
    sys.stdout = ClosedReaderSafe(stdout)  # type: ignore[assignment]
    try:
        _main(debug)
    finally:
        sys.stdout = stdout


def _main(debug: bool) -> None:
    try:
        # Standalone mode: Typer reports usage errors itself (exit 2).
        app()
    except SelfforgeError as exc:
        if debug:
            raise
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        sys.exit(exc.exit_code)
    except Exception as exc:  # anything unforeseen still gets one line, not a traceback
        if debug:
            raise
        err_console.print(
            f"[bold red]error:[/] {type(exc).__name__}: {escape(str(exc))} "
            "(rerun with --debug for details)",
            highlight=False,
        )
        sys.exit(1)
