"""What a person (or a script) sees while a run goes on.

Every reporter has the five ``Reporter`` methods the loop calls. ``choose_reporter``
picks one: the live view on a terminal (``live.LiveReporter``), a plain line per step
when the output is not a terminal, nothing with --quiet, one JSON event per line with
--json. Text that came from a user or a model is escaped before Rich renders it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import IO, Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.text import Text


class Reporter(Protocol):
    def begin(self, name: str) -> None: ...  # a step starts (a live line on terminals)
    def attempt(self, cycle: int, task: str) -> None: ...
    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None: ...
    def outcome(self, outcome: str, reason: str) -> None: ...
    def info(self, message: str) -> None: ...


class BaseReporter:
    """No-op defaults; ``close`` ends whatever the reporter keeps on screen."""

    def begin(self, name: str) -> None:
        pass

    def attempt(self, cycle: int, task: str) -> None:
        pass

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        pass

    def outcome(self, outcome: str, reason: str) -> None:
        pass

    def info(self, message: str) -> None:
        pass

    def close(self) -> None:
        pass


MARKS = {True: "[green]✓[/]", False: "[red]✗[/]", None: "[dim]·[/]"}
# An outcome's colour by its tone (judge.outcome.Outcome.tone: the outcome words are the
# judge's, and ui/ is below it; a plain string has no tone and is bold).
TONE_STYLE = {"good": "bold green", "bad": "bold red", "unsure": "yellow"}


# Directive sections the loop names in its messages ("raise [checks] timeout_s"): Rich
# would take them for style tags and print nothing.
_SECTION = re.compile(
    r"(?<!\\)\[(goals|checks|limits|model|roles|land|safety|sandbox|tool\.selfforge[\w.]*)\]"
)


def protect_sections(markup: str) -> str:
    """Markup whose ``[checks]``-style section names print as written."""
    return _SECTION.sub(r"\\[\1]", markup)


def first_line(text: str) -> str:
    """The first non-blank line, whole: the terminal may shorten it, nothing else does."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def step_line(name: str, ok: bool | None, detail: str, seconds: float) -> str:
    took = f"{seconds:6.2f}s" if seconds else "       "
    return f"  {MARKS[ok]} {escape(name):<14} {took}  [dim]{escape(first_line(detail))}[/]"


def outcome_line(outcome: str, reason: str) -> str:
    style = TONE_STYLE.get(getattr(outcome, "tone", ""), "bold")
    return f"  [{style}]{escape(outcome)}[/]: {escape(reason)}"


class ConsoleReporter(BaseReporter):
    """A line per step, for output that is not a terminal (a log file, a pipe)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)

    def attempt(self, cycle: int, task: str) -> None:
        self.console.print(f"\n[bold]cycle {cycle}[/] {escape(task)}")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.console.print(step_line(name, ok, detail, seconds))

    def outcome(self, outcome: str, reason: str) -> None:
        self.console.print(outcome_line(outcome, reason))

    def info(self, message: str) -> None:
        self.console.print(protect_sections(message))  # the loop's markup; quotes escaped


class SilentReporter(BaseReporter):
    """For --quiet runs and tests: collects steps instead of printing them."""

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


class JsonReporter(BaseReporter):
    """``run --json``: one JSON object per line, as things happen, flushed at once.

    Each has ``event`` (begin, attempt, step, outcome, info, summary) and ``elapsed_s``
    since the run started; texts are plain (no markup) and never shortened.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.started = time.monotonic()

    def emit(self, event: str, **fields: Any) -> None:
        record = {"event": event, "elapsed_s": round(time.monotonic() - self.started, 3)}
        record.update(fields)
        self.stream.write(json.dumps(record) + "\n")
        self.stream.flush()

    def begin(self, name: str) -> None:
        self.emit("begin", name=name)

    def attempt(self, cycle: int, task: str) -> None:
        self.emit("attempt", cycle=cycle, task=task)

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.emit("step", name=name, ok=ok, detail=detail, seconds=round(seconds, 3))

    def outcome(self, outcome: str, reason: str) -> None:
        self.emit("outcome", outcome=outcome, reason=reason)

    def info(self, message: str) -> None:
        self.emit("info", message=plain(message))


def plain(markup: str) -> str:
    """Rich markup as the text a person would read."""
    try:
        return Text.from_markup(protect_sections(markup)).plain
    except Exception:  # not markup after all (an unbalanced tag): keep it as written
        return markup


def close_reporter(reporter: object) -> None:
    close = getattr(reporter, "close", None)  # reporters written before close() existed
    if callable(close):
        close()
