"""`selfforge resident start|stop|status|serve`: keep selfforge's imports loaded between
commands (see selfforge/cli/resident.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from selfforge.errors import SelfforgeError, UsageError
from selfforge.models.durations import parse_duration

resident_app = typer.Typer(
    help="Keep selfforge loaded between commands: each `selfforge` command then starts in "
    "tens of milliseconds instead of ~0.4 s. Serves only this user, only this "
    "installation; restarts itself when selfforge's files change.",
    no_args_is_help=True,
)
IDLE_HELP = "Stop after this long with no command (e.g. 30m, 2h; 0: never)."


def register(app: typer.Typer) -> None:
    app.add_typer(resident_app, name="resident")


def _idle_seconds(text: str) -> float | None:
    if text.strip() == "0":
        return None
    seconds = parse_duration(text)
    if seconds is None:
        raise UsageError(f"--idle {text!r} is not a duration: write e.g. 30m, 2h or 0")
    return seconds or None


@resident_app.command("start")
def start(idle: Annotated[str, typer.Option("--idle", help=IDLE_HELP)] = "30m") -> None:
    """Start the resident in the background (nothing happens if it already runs)."""
    from selfforge.cli import launch, resident

    _idle_seconds(idle)
    running = launch.ask("ping")
    if running and running.get("ok"):
        print(f"resident selfforge already running (pid {running['pid']}, {running['socket']})")
        return
    resident.prepare_folder(launch.resident_dir())
    log = Path(launch.log_path())
    with open(log, "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "selfforge", "resident", "serve", "--idle", idle],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # no terminal: Ctrl-C in this shell does not stop it
            env={**os.environ, "SELFFORGE_RESIDENT": "0"},
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = launch.ask("ping")
        if answer and answer.get("ok"):
            until = f"after {idle} idle or " if _idle_seconds(idle) else ""
            print(
                f"resident selfforge started (pid {answer['pid']}, {answer['socket']}); "
                f"stops {until}with `selfforge resident stop`"
            )
            return
        time.sleep(0.05)
    raise SelfforgeError(f"the resident did not start within 30 s: see {log}")


@resident_app.command("stop")
def stop() -> None:
    """Stop the resident (commands then start on their own again)."""
    from selfforge.cli import launch

    answer = launch.ask("stop")
    print("resident selfforge stopped" if answer else "no resident selfforge is running")


@resident_app.command("status")
def status() -> None:
    """Whether a resident runs: its pid, socket, uptime and commands served."""
    from selfforge.cli import launch

    answer = launch.ask("ping")
    if not answer or not answer.get("ok"):
        print(f"no resident selfforge is running (socket {launch.socket_path()})")
        raise typer.Exit(1)
    up = time.time() - float(answer["started"])  # type: ignore[arg-type]
    print(
        f"resident selfforge: pid {answer['pid']}, socket {answer['socket']}, "
        f"up {up:.0f} s, {answer['served']} command(s) served"
    )


@resident_app.command("serve")
def serve(idle: Annotated[str, typer.Option("--idle", help=IDLE_HELP)] = "30m") -> None:
    """Run the resident in the foreground (what `start` runs in the background)."""
    from selfforge.cli import resident

    idle_s = _idle_seconds(idle)
    if resident.claim() is None:  # before the imports: a second one leaves at once
        print("a resident selfforge already runs or is starting: nothing to do")
        return
    os.chdir("/")  # a folder it started in stays removable; each worker goes to its own
    resident.Resident(idle_s=idle_s).serve()
