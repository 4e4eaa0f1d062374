"""What a person sees while a run goes on: one line per step, with its duration."""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.markup import escape
from rich.status import Status


class Reporter(Protocol):
    def begin(self, name: str) -> None: ...  # a step starts (a live line on terminals)
    def attempt(self, cycle: int, task: str) -> None: ...
    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None: ...
    def outcome(self, outcome: str, reason: str) -> None: ...
    def info(self, message: str) -> None: ...


_MARKS = {True: "[green]✓[/]", False: "[red]✗[/]", None: "[dim]·[/]"}
_OUTCOME_STYLE = {
    "accepted": "bold green",
    "rejected": "bold red",
    "no_edits": "yellow",
    "error": "bold red",
}


class ConsoleReporter:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)
        self._live: Status | None = None

    def begin(self, name: str) -> None:
        """Show the running step on a terminal until its result line replaces it."""
        self._end_live()
        if self.console.is_terminal:
            self._live = self.console.status(f"{name}…", spinner="dots")
            self._live.start()

    def _end_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def attempt(self, cycle: int, task: str) -> None:
        self._end_live()
        self.console.print(f"\n[bold]cycle {cycle}[/] {escape(task)}")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self._end_live()
        took = f"{seconds:6.2f}s" if seconds else "       "
        first = detail.splitlines()[0] if detail else ""
        self.console.print(f"  {_MARKS[ok]} {name:<14} {took}  [dim]{escape(first)}[/]")

    def outcome(self, outcome: str, reason: str) -> None:
        self._end_live()
        style = _OUTCOME_STYLE.get(outcome, "bold")
        self.console.print(f"  [{style}]{outcome}[/]: {escape(reason)}")

    def info(self, message: str) -> None:
        self._end_live()
        self.console.print(message)


class SilentReporter:
    """For --json runs and tests: collects steps instead of printing them."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def begin(self, name: str) -> None:
        pass

    def attempt(self, cycle: int, task: str) -> None:
        self.lines.append(f"cycle {cycle}: {task}")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.lines.append(f"{name} {ok} {detail}")

    def outcome(self, outcome: str, reason: str) -> None:
        self.lines.append(f"{outcome}: {reason}")

    def info(self, message: str) -> None:
        self.lines.append(message)
