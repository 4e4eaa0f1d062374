"""A reporter that also writes each step to the journal, so `selfforge serve` shows the
gates' verdicts and the stage now running while a run goes on; and the two writes it
makes (the ``steps`` table and ``runs.stage``), which only it makes."""

from __future__ import annotations

import re
import time
from pathlib import Path

from selfforge.journal.store import Journal
from selfforge.ui.reporters import Reporter

_CANDIDATE = re.compile(r"#(\d+) ")  # best of N: "#2 tests" is candidate 2's step


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
            set_stage(journal, name)

    def attempt(self, cycle: int, task: str) -> None:
        self.inner.attempt(cycle, task)
        if journal := self._store():
            set_stage(journal, "propose")

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.inner.step(name, ok, detail, seconds)
        if journal := self._store():
            record_step(journal, name, ok, detail, seconds)

    def outcome(self, outcome: str, reason: str) -> None:
        self.inner.outcome(outcome, reason)
        if journal := self._store():
            set_stage(journal, None)

    def info(self, message: str) -> None:
        self.inner.info(message)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None


def record_step(journal: Journal, name: str, ok: bool | None, detail: str, seconds: float) -> None:
    """A finished step of the running run's open attempt (or of no attempt: baseline).
    A best-of-N candidate's step, ``#K tests``, is its attempt's ``tests``."""
    candidate = None
    if m := _CANDIDATE.match(name):
        candidate, name = int(m[1]), name[m.end() :]
    run_id, attempt_id = _running(journal, candidate)
    if run_id is None:
        return
    journal.conn.execute(
        "INSERT INTO steps (run_id, attempt_id, name, ok, detail, seconds, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run_id, attempt_id, name, None if ok is None else int(ok), detail, seconds, time.time()),
    )


def set_stage(journal: Journal, stage: str | None) -> None:
    """The stage the running run is in now (None between attempts)."""
    run_id, _ = _running(journal)
    if run_id is not None:
        journal.conn.execute("UPDATE runs SET stage = ? WHERE id = ?", (stage, run_id))


def _running(journal: Journal, candidate: int | None = None) -> tuple[int | None, int | None]:
    """The running run and its open attempt (candidate K's, in a best-of-N cycle), if any."""
    row = journal.conn.execute(
        "SELECT r.id, (SELECT max(a.id) FROM attempts a WHERE a.run_id = r.id "
        "AND a.outcome IS NULL AND (?1 IS NULL OR a.candidate = ?1)) FROM runs r "
        "WHERE r.status = 'running' ORDER BY r.id DESC LIMIT 1",
        (candidate,),
    ).fetchone()
    return (row[0], row[1]) if row else (None, None)
