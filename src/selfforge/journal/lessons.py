"""Lessons: what the journal's past attempts teach the next ones. The attempts most like a
task (FTS5 BM25 over their task, reason and lesson), for its prompt, and the lessons kept
lately, which a new lesson must not merely repeat."""

from __future__ import annotations

import re

from selfforge.journal.schema import ATTEMPT_COLUMNS, AttemptRecord, attempt_record
from selfforge.journal.store import Journal


def similar_attempts(journal: Journal, text: str, limit: int = 3) -> list[AttemptRecord]:
    """Past finished attempts most similar to ``text`` (FTS5 BM25), best first."""
    words = [w for w in _words(text) if len(w) > 2][:32]
    if not words:
        return []
    query = " OR ".join(f'"{w}"' for w in words)
    rows = journal.conn.execute(
        f"SELECT {', '.join('a.' + c.strip() for c in ATTEMPT_COLUMNS.split(','))} "
        "FROM attempts_fts f JOIN attempts a ON a.id = f.rowid "
        "WHERE attempts_fts MATCH ? AND a.outcome IS NOT NULL "
        "ORDER BY bm25(attempts_fts) LIMIT ?",
        (query, limit),
    ).fetchall()
    return [attempt_record(r) for r in rows]


def recent_lessons(journal: Journal, limit: int = 50) -> list[str]:
    rows = journal.conn.execute(
        "SELECT lesson FROM attempts WHERE lesson IS NOT NULL ORDER BY id DESC LIMIT ?",
        (limit,),
    )
    return [str(r[0]) for r in rows]


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9_]+", text.lower())
