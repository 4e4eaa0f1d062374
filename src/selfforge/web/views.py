"""What the dashboard's queries return: the view's filters (and the SQL they add) and
the records of the timeline, a summary, a run and an attempt."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from selfforge.journal.schema import AttemptRecord
from selfforge.judge.outcome import JOURNALED

PAGE = 50
FILTER_OUTCOMES = (*JOURNALED, "open")


@dataclass(frozen=True)
class Filters:
    outcome: str | None = None
    task: str | None = None
    run: int | None = None

    @classmethod
    def parse(cls, params: Any) -> Filters:
        outcome = params.get("outcome") or None
        run = params.get("run") or None
        return cls(
            outcome=outcome if outcome in FILTER_OUTCOMES else None,
            task=(params.get("task") or "").strip() or None,
            run=int(run) if run and str(run).isdigit() else None,
        )

    def query(self, **extra: Any) -> str:
        pairs = {"outcome": self.outcome, "task": self.task, "run": self.run, **extra}
        return urlencode({k: v for k, v in pairs.items() if v is not None})

    def where(self) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if self.outcome == "open":
            clauses.append("outcome IS NULL")
        elif self.outcome:
            clauses.append("outcome = ?")
            args.append(self.outcome)
        if self.task:
            clauses.append("instr(lower(task), lower(?)) > 0")
            args.append(self.task)
        if self.run is not None:
            clauses.append("run_id = ?")
            args.append(self.run)
        return clauses, args


@dataclass
class Row:
    """One attempt on the timeline."""

    id: int
    run_id: int
    cycle: int
    task: str
    outcome: str | None
    reason: str | None
    repairs: int
    landed: bool
    commit: str | None
    started_at: float
    ended_at: float | None
    reverted_by: str | None = None  # the revert commit, once `selfforge undo` undid it
    cost_usd: float = 0.0
    tokens: int = 0


@dataclass
class Summary:
    """The numbers of the attempts a view shows."""

    attempts: int
    accepted: int
    rejected: int
    landed: int
    undone: int
    cost_usd: float
    tokens: int
    seconds: float

    @property
    def acceptance(self) -> str:
        judged = self.accepted + self.rejected
        return f"{100 * self.accepted / judged:.0f}%" if judged else "—"


@dataclass
class RunRow:
    id: int
    started_at: float
    ended_at: float | None
    status: str
    model: str | None
    goals: list[str]
    stop_reason: str | None
    stage: str | None
    attempts: int
    accepted: int
    rejected: int
    landed: int
    tokens: int
    cost_usd: float
    undone: int = 0


@dataclass
class AttemptPage:
    record: AttemptRecord
    calls: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    trajectory: list[dict[str, Any]] = field(default_factory=list)  # an explorer's steps


@dataclass
class Live:
    run_id: int
    stage: str | None
    attempt_id: int | None
    cycle: int | None
    task: str | None
