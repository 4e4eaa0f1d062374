"""The ``selfforge`` command line: a thin Typer app. Parse, call, print.

Commands live in ``selfforge/cli/commands/<area>.py``; each module defines
``register(app)``. Errors a user can cause are ``SelfforgeError``s and leave as one line
and an exit code (2 usage/directives, 1 anything else); tracebacks only with --debug.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

import typer
from rich.markup import escape

from selfforge.cli.exit_codes import document_exit_codes
from selfforge.errors import SelfforgeError
from selfforge.ui.consoles import make_console
from selfforge.ui.outstream import ClosedReaderSafe

COMMAND_MODULES: tuple[str, ...] = (
    "selfforge.cli.commands.core",
    "selfforge.cli.commands.edits",
    "selfforge.cli.commands.check",
    "selfforge.cli.commands.measure",
    "selfforge.cli.commands.context",
    "selfforge.cli.commands.models",
    "selfforge.cli.commands.autonomy",
    "selfforge.cli.commands.bench",
    "selfforge.cli.commands.serve",
    "selfforge.cli.commands.resident",
)
# Which module registers each command, so that `selfforge run` imports (and Typer converts)
# only what `run` needs: the whole app's imports are a third of a small judged change's
# overhead. A test keeps this table equal to what the modules register.
COMMAND_HOMES: dict[str, str] = {
    **dict.fromkeys(
        ("init", "run", "log", "show", "status", "undo", "demo", "rollback", "clean"),
        "selfforge.cli.commands.core",
    ),
    "apply-edits": "selfforge.cli.commands.edits",
    "check": "selfforge.cli.commands.check",
    "mcp": "selfforge.cli.commands.check",
    "measure": "selfforge.cli.commands.measure",
    "index": "selfforge.cli.commands.context",
    "map": "selfforge.cli.commands.context",
    "models": "selfforge.cli.commands.models",
    "doctor": "selfforge.cli.commands.models",
    "plan": "selfforge.cli.commands.autonomy",
    "export": "selfforge.cli.commands.autonomy",
    "bench": "selfforge.cli.commands.bench",
    "serve": "selfforge.cli.commands.serve",
    "resident": "selfforge.cli.commands.resident",
}
ROOT_FLAGS = ("--debug",)

err_console = make_console(stderr=True, soft_wrap=True)
_state = {"debug": False}


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"selfforge {version('selfforge')}")
        raise typer.Exit()


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


def build_app(modules: tuple[str, ...] = COMMAND_MODULES) -> typer.Typer:
    """The Typer app with the commands of ``modules`` (all of them by default)."""
    built = typer.Typer(
        name="selfforge",
        help="Improve a git repository toward written goals, one checked commit at a time.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # help text shows [limits] and [@BASE_URL] literally
    )
    built.callback()(_root)
    for name in modules:
        importlib.import_module(name).register(built)
    document_exit_codes(built)
    return built


def modules_for(argv: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: the named command's own, or all of them
    (no command, --help or --version at the top, shell completion, an unknown name)."""
    words = [w for w in argv if w not in ROOT_FLAGS]
    if not words or "_SELFFORGE_COMPLETE" in os.environ:
        return COMMAND_MODULES
    home = COMMAND_HOMES.get(words[0])
    return (home,) if home else COMMAND_MODULES


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole app, for typer.testing and docs
        return build_app()
    raise AttributeError(name)


def main(command: Callable[[], object] | None = None) -> None:
    """Run the command line in ``sys.argv``; ``command``: the app already converted to a
    click command (a resident selfforge converts it once for all its workers)."""
    debug = "--debug" in sys.argv
    stdout = sys.stdout
    sys.stdout = ClosedReaderSafe(stdout)  # type: ignore[assignment]
    try:
        _main(debug, command or build_app(modules_for(sys.argv[1:])))
    finally:
        sys.stdout = stdout


def _main(debug: bool, command: Callable[[], object]) -> None:
    try:
        command()  # standalone mode: usage errors are reported by click (exit 2)
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
