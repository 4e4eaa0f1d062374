"""The exit codes of every command, in one table: shown under each command's --help and
in docs/cli.md (a test keeps the two equal).

The rule everywhere: 0 the command did its job; 2 bad usage or bad directives; 1 anything
else, with a one-line cause on stderr; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import typer

ONE = "1 any other failure, with a one-line cause"


def _codes(done: str, usage: str = "", failure: str = "") -> str:
    usage = f"2 bad usage or bad directives{', or ' + usage if usage else ''}"
    return f"0 {done}; {usage}; {ONE}{f' ({failure})' if failure else ''}"


EXIT_CODES: dict[str, str] = {
    "init": _codes("selfforge.toml written", "selfforge.toml exists and no --force"),
    "run": _codes(
        "the run ended at a limit, even if every attempt was rejected or a budget or quota "
        "stopped it",
        failure=(
            "e.g. a check command that cannot run, a model that cannot be used (unknown, "
            "key refused, unreachable), the lock held by another run"
        ),
    )
    + "; 130 interrupted, nothing of the attempt in progress landed",
    "log": _codes("listed (maybe nothing)", "a bad filter, or no journal yet"),
    "show": _codes("shown", "no such attempt, or no journal yet"),
    "status": _codes("status printed"),
    "undo": _codes(
        "the change was reverted",
        "the change is not on the current branch",
        "e.g. nothing to undo, a later commit touches the same lines, uncommitted changes",
    ),
    "demo": _codes("the demo ran"),
    "rollback": _codes("restored"),
    "clean": _codes("cleaned (or listed, with --dry-run)", failure="e.g. a run holds the lock"),
    "check": "0 accepted; 1 rejected (the reasons are printed and journaled); 2 could not "
    "judge: bad usage or directives, no such change, a patch that does not apply, tests that "
    "cannot judge (the reason and the fix); 3 needs review: every gate passed but the change "
    "touches protected paths, dependencies or build configuration, changes tested behaviour "
    "(a base test fails on it and the change rewrote that test's expectation, or updated base "
    "tests that no longer build against it), marks as expected failures tests that failed on "
    "the base already, declares a change of tested behaviour "
    "(--changes, a Selfforge-Changes trailer), adds a test that passes on the base and on every "
    "mutant of the change's lines, adds code no test runs, a declared measure is worse, or a "
    "coverage measure rose only by lines no added test checks",
    "measure": _codes(
        "measured (whatever the verdicts: improved, unchanged, worse or inconclusive)",
        "no measure declared, an unknown --measure, no such revision",
        "a measure gave no number: its command failed or printed none",
    ),
    "mcp": _codes("the client closed the connection", "the mcp extra not installed"),
    "apply-edits": "0 every edit applied; 1 some edit did not, and no file changed; 2 bad usage",
    "index": _codes("index built"),
    "map": _codes("map printed"),
    "models": _codes("listed", "no model configured", "e.g. a key refused, no server"),
    "doctor": "0 nothing to fix (warnings allowed); 1 something to fix, each with its fix; "
    "2 bad usage",
    "plan": _codes("done", "no such open task"),
    "export": _codes("written"),
    "bench": _codes(
        "mined, or every job ran (whatever the verdicts) or the budget stopped new ones, and "
        "the report is written",
        "no instances file, or nothing to run",
        "e.g. a job ended in an error, not a verdict (the report is written all the same)",
    )
    + "; 130 interrupted, the finished jobs are kept",
    "resident": _codes(
        "started, stopped or shown (stop and start also when there was nothing to do)",
        "a bad --idle",
        "e.g. status with no resident running, a socket folder not private to the user",
    ),
    "serve": _codes(
        "served until Ctrl-C",
        "the port cannot be used",
        "e.g. no journal yet, the web extra not installed",
    ),
}


def epilog(command: str) -> str:
    return f"Exit codes: {EXIT_CODES[command]}."


def document_exit_codes(app: typer.Typer) -> None:
    """Put each command's exit codes under its --help."""
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if name in EXIT_CODES and not info.epilog:
            info.epilog = epilog(name)
    for group in app.registered_groups:
        if group.name in EXIT_CODES and group.typer_instance is not None:
            group.typer_instance.info.epilog = epilog(group.name)
