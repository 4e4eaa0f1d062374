"""Where the judge's observations go: the journal (every check, in full) and the
terminal (one line per step)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from selfforge.journal.store import Journal
from selfforge.ui.reporters import Reporter

if TYPE_CHECKING:
    from selfforge.judge.sandbox.command import CommandResult


@dataclass(frozen=True)
class CheckRecord:
    """One check the judge journaled, as the judgement keeps it in memory."""

    name: str
    passed: bool
    exit_code: int | None
    seconds: float = 0.0
    summary: dict[str, int] | None = None


@dataclass(frozen=True)
class Recorder:
    journal: Journal
    reporter: Reporter
    run_id: int
    on_start: Callable[[int | None], None] | None = None  # a check's process group
    # every check journaled through this recorder, in order (the judgement's steps)
    checks: list[CheckRecord] = field(default_factory=list)

    def begin(self, name: str) -> None:
        self.reporter.begin(name)

    def step(
        self,
        name: str,
        ok: bool | None,
        detail: str = "",
        started: float | None = None,
        *,
        result: CommandResult | None = None,
    ) -> None:
        seconds = result.duration_s if result else _since(started)
        self.reporter.step(name, ok, detail, seconds)

    def check(
        self,
        c: Any,
        name: str,
        command: str | None,
        exit_code: int | None,
        ok: bool,
        timing: float | CommandResult | None,
        output: str,
        summary: dict[str, int] | None = None,
        show: bool = True,
        names: list[str] | None = None,
        started_at: float | None = None,
    ) -> None:
        """Journal one check of candidate ``c``; show it as a step unless told not to.
        ``started_at``: when it began (wall clock), for a run journaled well after it ended
        (one run ahead of its stage: suite_runs.RunAhead)."""
        result = timing if not isinstance(timing, float | int | type(None)) else None
        seconds = result.duration_s if result is not None else _since(timing)  # type: ignore[arg-type]
        self.journal.record_check(
            run_id=self.run_id,
            attempt_id=c.attempt_id,
            round_=c.round,
            name=name,
            command=command,
            exit_code=exit_code,
            passed=ok,
            timed_out=bool(result and result.timed_out),
            duration_s=seconds,
            output=output,
            summary=summary,
            started_at=started_at,
        )
        self.checks.append(CheckRecord(name, ok, exit_code, seconds, summary))
        if show:
            detail = ", ".join(f"{v} {k}" for k, v in (summary or {}).items())
            detail = detail or first_line(output)
            if names:
                detail += ": " + named(names)
            self.reporter.step(name, ok, detail, seconds)

    def flaky(self, c: Any, tests: list[str]) -> None:
        text = "outcome changed between runs of the same tree:\n" + "\n".join(tests)
        self.check(c, "tests:flaky", None, None, True, None, text, {"flaky": len(tests)})


def _since(started: float | None) -> float:
    return time.monotonic() - started if started else 0.0


def named(items: list[str], limit: int = 3) -> str:
    """Up to ``limit`` names and how many more: what a step line shows of what failed."""
    more = f" +{len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
