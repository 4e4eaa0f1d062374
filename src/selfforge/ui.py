"""What a person sees while a run goes on: one line per step, with its duration."""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.markup import escape


class Reporter(Protocol):
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

    def attempt(self, cycle: int, task: str) -> None:
        self.console.print(f"\n[bold]cycle {cycle}[/] {escape(task)}")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        took = f"{seconds:6.2f}s" if seconds else "       "
        first = detail.splitlines()[0] if detail else ""
        self.console.print(f"  {_MARKS[ok]} {name:<14} {took}  [dim]{escape(first)}[/]")

    def outcome(self, outcome: str, reason: str) -> None:
        style = _OUTCOME_STYLE.get(outcome, "bold")
        self.console.print(f"  [{style}]{outcome}[/]: {escape(reason)}")

    def info(self, message: str) -> None:
        self.console.print(message)


class SilentReporter:
    """For --json runs and tests: collects steps instead of printing them."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def attempt(self, cycle: int, task: str) -> None:
        self.lines.append(f"cycle {cycle}: {task}")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.lines.append(f"{name} {ok} {detail}")

    def outcome(self, outcome: str, reason: str) -> None:
        self.lines.append(f"{outcome}: {reason}")

    def info(self, message: str) -> None:
        self.lines.append(message)
