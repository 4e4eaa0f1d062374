"""The live view of a run on a terminal (Rich Live).

Finished steps and each attempt's verdict scroll above; below them a few lines stay
and move: what is happening now and for how long, the run's elapsed time, cycle i/N,
the task, and the tokens and cost so far (read from the journal, which every model
call is written to before it returns).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from selfforge.ui.reporters import (
    BaseReporter,
    first_line,
    outcome_line,
    protect_sections,
    step_line,
)

# What a step's name means to a person watching.
_LABELS = {
    "baseline": "baseline: running lint and tests on your code as it is",
    "propose": "proposing: waiting for the model's edit",
    "critique": "critique: the model reads the change",
    "lint": "checking: lint",
    "tests": "checking: the full test suite",
    "tests:affected": "checking: the tests the change reaches",
    "tests:new": "checking: the change's new tests",
    "smoke run": "checking: a smoke run of the new selfforge",
}
# What runs after a step that ends without the next one announcing itself.
_AFTER = {
    "propose": "applying the edits",
    "repair": "applying the edits",
    "apply": "checking: syntax and integrity",
    "tests": "landing: committing the change",
    "review": "landing: committing the change",
    "land": "reflecting: writing a lesson",
}


def label(name: str, commands: dict[str, str] | None = None) -> str:
    """What a step's name means, with the command it runs when there is one."""
    if name.startswith("repair"):
        return f"{name}: waiting for the model's repaired edit"
    if name.startswith("#"):  # best of N: "#2 tests" is candidate 2's
        number, _, rest = name.partition(" ")
        return f"{label(rest, commands)} (candidate {number[1:]})"
    if name.startswith("review:"):
        return f"reviewing: the {name.partition(':')[2]} reviewer votes"
    text = _LABELS.get(name, name)
    command = (commands or {}).get(name.partition(":")[0])
    return f"{text} ({first_line(command)})" if command and name != "baseline" else text


class Spend:
    """Tokens and cost of the current run, read from the journal at most twice a second."""

    def __init__(self, journal: Path) -> None:
        self.path = journal
        self.floor = self._last_run()  # runs up to this one are earlier runs
        self.tokens, self.cost = 0, 0.0
        self._read_at = 0.0
        self._lock = threading.Lock()

    def _query(self, sql: str, *args: object) -> tuple[object, ...] | None:
        if not self.path.exists():
            return None
        try:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1) as conn:
                return conn.execute(sql, args).fetchone()
        except sqlite3.Error:  # being created or migrated right now: try again later
            return None

    def _last_run(self) -> int:
        row = self._query("SELECT coalesce(max(id), 0) FROM runs")
        return int(row[0]) if row else 0  # type: ignore[call-overload]

    def read(self) -> tuple[int, float]:
        with self._lock:
            if time.monotonic() - self._read_at >= 0.5:
                self._read_at = time.monotonic()
                row = self._query(
                    "SELECT coalesce(sum(input_tokens + output_tokens), 0), "
                    "coalesce(sum(cost_usd), 0) FROM model_calls WHERE run_id > ?",
                    self.floor,
                )
                if row:
                    self.tokens, self.cost = int(row[0]), float(row[1])  # type: ignore[call-overload,arg-type]
            return self.tokens, self.cost


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class LiveReporter(BaseReporter):
    def __init__(
        self,
        console: Console,
        cycles: int,
        journal: Path,
        commands: dict[str, str] | None = None,  # "lint", "tests": the check commands
    ) -> None:
        self.console, self.cycles, self.commands = console, cycles, commands or {}
        self.spend = Spend(journal)
        self.run_started = self.stage_started = time.monotonic()
        self.stage, self.cycle, self.task = "starting", 0, ""
        self.verdicts: dict[str, int] = {}
        self._spinner = Spinner("dots")
        self._live = Live(
            console=console,
            get_renderable=self._render,
            refresh_per_second=4,
            transient=True,  # the summary printed after the run replaces it
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def _set_stage(self, text: str) -> None:
        self.stage, self.stage_started = text, time.monotonic()

    def _render(self) -> RenderableType:
        now = time.monotonic()
        tokens, cost = self.spend.read()
        head = Table.grid(padding=(0, 1))
        head.add_row(
            self._spinner,
            Text(self.stage, style="bold"),
            Text(clock(now - self.stage_started), style="cyan"),
        )
        cycle = f"cycle {self.cycle}/{self.cycles}" if self.cycle else f"{self.cycles} cycle(s)"
        tally = ", ".join(f"{n} {k}" for k, n in self.verdicts.items())
        facts = (
            f"  run {clock(now - self.run_started)} · {cycle} · {tokens:,} tokens · ${cost:.4f}"
            + (f" · {tally}" if tally else "")
        )
        lines: list[RenderableType] = [head, Text(facts, style="dim")]
        if self.task:
            lines.append(
                Text(f"  task: {first_line(self.task)}", no_wrap=True, overflow="ellipsis")
            )
        return Group(*lines)

    def begin(self, name: str) -> None:
        self._set_stage(label(name, self.commands))

    def attempt(self, cycle: int, task: str) -> None:
        self.cycle, self.task = cycle, task
        self.console.print(f"\n[bold]cycle {cycle}/{self.cycles}[/] {escape(task)}")
        self._set_stage("starting the attempt: choosing files")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.console.print(step_line(name, ok, detail, seconds), no_wrap=True, overflow="ellipsis")
        after = _AFTER.get(name.split(" ")[0].split(":")[0])
        if after and ok is not False:
            self._set_stage(after)

    def outcome(self, outcome: str, reason: str) -> None:
        self.verdicts[outcome] = self.verdicts.get(outcome, 0) + 1
        line = outcome_line(outcome, first_line(reason))
        self.console.print(line, no_wrap=True, overflow="ellipsis")  # `show` has it whole
        self._set_stage("planning the next step")

    def info(self, message: str) -> None:
        self.console.print(protect_sections(message))

    def close(self) -> None:
        self._live.stop()
