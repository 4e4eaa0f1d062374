"""A reporter that also writes each step to the journal, so `selfforge serve` shows the
gates' verdicts and the stage now running while a run goes on."""

from __future__ import annotations

from pathlib import Path

from selfforge.journal import Journal
from selfforge.ui import Reporter


class JournalingReporter:
    """Passes everything on to ``inner``; records steps through a connection of its own
    (opened at the first step, when the run has already created and migrated the journal)."""

    def __init__(self, inner: Reporter, journal_path: Path) -> None:
        self.inner = inner
        self.path = journal_path
        self._journal: Journal | None = None

    def _store(self) -> Journal | None:
        if self._journal is None and self.path.exists():
            self._journal = Journal(self.path)
        return self._journal

    def begin(self, name: str) -> None:
        self.inner.begin(name)
        if journal := self._store():
            journal.set_stage(name)

    def attempt(self, cycle: int, task: str) -> None:
        self.inner.attempt(cycle, task)
        if journal := self._store():
            journal.set_stage("propose")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.inner.step(name, ok, detail, seconds)
        if journal := self._store():
            journal.record_step(name, ok, detail, seconds)

    def outcome(self, outcome: str, reason: str) -> None:
        self.inner.outcome(outcome, reason)
        if journal := self._store():
            journal.set_stage(None)

    def info(self, message: str) -> None:
        self.inner.info(message)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
