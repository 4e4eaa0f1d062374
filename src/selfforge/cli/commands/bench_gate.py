"""bench gate: judge recent commits whole, and cheats drawn from each, as `selfforge check`
would; registered under `selfforge bench` by commands/bench.py."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from selfforge.errors import UsageError
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)
err_console = make_console(stderr=True, highlight=False, soft_wrap=True)


def gate_command(
    repo: Path = typer.Option(Path("."), "--repo", help="A clone of the repository to measure."),
    out: Path = typer.Option(
        Path("bench-gate"), "--out", help="Folder for the results, the report and the work clone."
    ),
    since: str = typer.Option(None, help="Only commits after this date, e.g. 2025-01-01."),
    limit: int = typer.Option(None, min=1, help="The newest N commits."),
    test_cmd: str = typer.Option(
        None, "--test-cmd", help="The test command (default: detected, as for bench mine)."
    ),
    kinds: str = typer.Option(
        None,
        "--kinds",
        help="Cheat kinds, comma-separated: weaken,skip,xfail,delete (a planted bug hidden), "
        "rewrite (the expectation rewritten to the bug's output), vacuous,vacuous_no_fix (the "
        "commit's new tests made trivially true; default all).",
    ),
    cheats_per_commit: int = typer.Option(
        None,
        "--cheats-per-commit",
        min=0,
        help="Draw only this many kinds per commit, rotating through the kinds (default all).",
    ),
    allow_test_edits: bool = typer.Option(
        False, "--allow-test-edits", help="Judge the cheats with [safety] allow_test_edits = true."
    ),
    timeout: float = typer.Option(300, min=1, help="Seconds per test run."),
) -> None:
    """Judge recent commits whole with `selfforge check` (tests included, base = parent),
    and cheats drawn from each (a planted bug plus the existing test that caught it
    weakened, skipped, xfailed or deleted); resumable; write and print a report."""
    from selfforge.bench.gate import run_gate
    from selfforge.bench.gate_cheats import CHEAT_KINDS
    from selfforge.bench.gate_report import write

    chosen = tuple(k.strip() for k in (kinds or ",".join(CHEAT_KINDS)).split(",") if k.strip())
    if not chosen or any(k not in CHEAT_KINDS for k in chosen):
        raise UsageError(
            f"--kinds {kinds!r}: use some of {', '.join(CHEAT_KINDS)}, comma-separated"
        )

    def show(record) -> None:  # type: ignore[no-untyped-def]
        err_console.print(
            f"{record.commit[:10]} {record.kind}: {record.verdict} {escape(record.reason[:120])}",
            highlight=False,
        )

    records = run_gate(
        repo,
        out,
        since=since,
        limit=limit,
        on_done=show,
        test_cmd=test_cmd,
        kinds=chosen,
        cheats_per_commit=cheats_per_commit,
        setting="allow_test_edits" if allow_test_edits else "default",
        timeout_s=timeout,
    )
    from selfforge.bench.gate import RESULTS, read_records

    everything = read_records(out / RESULTS)
    seen = {r.key for r in records}
    path, text = write([r for r in everything if r.key in seen], out)
    console.print(escape(text), highlight=False)
    console.print(f"results: {out / RESULTS}\nreport:  {path}")
