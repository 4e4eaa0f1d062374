"""The journal's schema (numbered migrations applied in order on ``user_version``) and
the records read from it.

Append a migration to change the schema; never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

MIGRATIONS: list[str] = [
    # 1: runs, attempts, model calls, checks, and full-text search over attempts
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY, started_at REAL NOT NULL, ended_at REAL,
        status TEXT NOT NULL, pid INTEGER, base_branch TEXT, base_commit TEXT,
        model TEXT, goals TEXT NOT NULL DEFAULT '[]', land_mode TEXT, stop_reason TEXT
    );
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
        cycle INTEGER NOT NULL, task TEXT NOT NULL, outcome TEXT, reason TEXT,
        repairs INTEGER NOT NULL DEFAULT 0, base_commit TEXT, commit_sha TEXT, branch TEXT,
        landed INTEGER NOT NULL DEFAULT 0, diff TEXT, lesson TEXT,
        started_at REAL NOT NULL, ended_at REAL
    );
    CREATE TABLE model_calls (
        id INTEGER PRIMARY KEY, run_id INTEGER, attempt_id INTEGER, role TEXT NOT NULL,
        model TEXT, prompt TEXT, response TEXT, error TEXT,
        input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
        cached_tokens INTEGER DEFAULT 0, thinking_tokens INTEGER DEFAULT 0,
        cost_usd REAL, latency_s REAL, sections TEXT, created_at REAL NOT NULL
    );
    CREATE TABLE checks (
        id INTEGER PRIMARY KEY, run_id INTEGER, attempt_id INTEGER, round INTEGER,
        name TEXT NOT NULL, command TEXT, exit_code INTEGER, passed INTEGER NOT NULL,
        timed_out INTEGER NOT NULL DEFAULT 0, duration_s REAL, output TEXT, summary TEXT,
        created_at REAL NOT NULL
    );
    CREATE INDEX attempts_run ON attempts(run_id);
    CREATE INDEX calls_attempt ON model_calls(attempt_id);
    CREATE INDEX checks_attempt ON checks(attempt_id);
    CREATE VIRTUAL TABLE attempts_fts USING fts5(
        task, reason, lesson, content='attempts', content_rowid='id'
    );
    CREATE TRIGGER attempts_ai AFTER INSERT ON attempts BEGIN
        INSERT INTO attempts_fts(rowid, task, reason, lesson)
        VALUES (new.id, new.task, coalesce(new.reason, ''), coalesce(new.lesson, ''));
    END;
    CREATE TRIGGER attempts_au AFTER UPDATE ON attempts BEGIN
        INSERT INTO attempts_fts(attempts_fts, rowid, task, reason, lesson)
        VALUES ('delete', old.id, old.task, coalesce(old.reason, ''), coalesce(old.lesson, ''));
        INSERT INTO attempts_fts(rowid, task, reason, lesson)
        VALUES (new.id, new.task, coalesce(new.reason, ''), coalesce(new.lesson, ''));
    END;
    """,
    # 2: the backlog of planned tasks and the last known good commit of a self-run
    """
    CREATE TABLE tasks (
        id INTEGER PRIMARY KEY, text TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'open',
        priority REAL NOT NULL DEFAULT 0, source TEXT NOT NULL DEFAULT 'plan',
        attempts INTEGER NOT NULL DEFAULT 0, note TEXT, created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    """,
    # 3: a task can be retried in another edit format (a strategy against a stall)
    """
    ALTER TABLE tasks ADD COLUMN edit_format TEXT;
    """,
    # 4: `selfforge undo` marks the landed attempt it reverted
    """
    ALTER TABLE attempts ADD COLUMN reverted_by TEXT;
    """,
    # 5: why a reply was cut or dropped (truncated at the output limit, a junk lesson)
    """
    ALTER TABLE model_calls ADD COLUMN note TEXT;
    """,
    # 6: every step a run reports (gates, votes) and the stage now running, for the
    # dashboard; indexes that keep its pages fast on a long history
    """
    CREATE TABLE steps (
        id INTEGER PRIMARY KEY, run_id INTEGER, attempt_id INTEGER, name TEXT NOT NULL,
        ok INTEGER, detail TEXT, seconds REAL, created_at REAL NOT NULL
    );
    CREATE INDEX steps_attempt ON steps(attempt_id);
    CREATE INDEX steps_name ON steps(name, seconds);
    ALTER TABLE runs ADD COLUMN stage TEXT;
    CREATE INDEX attempts_outcome ON attempts(outcome);
    CREATE INDEX attempts_task ON attempts(task, outcome);
    CREATE INDEX attempts_run_outcome ON attempts(run_id, outcome, landed);
    CREATE INDEX calls_attempt_spend
        ON model_calls(attempt_id, cost_usd, input_tokens, output_tokens, created_at);
    CREATE INDEX calls_run_spend ON model_calls(run_id, cost_usd, input_tokens, output_tokens);
    """,
    # 7: the acceptance criterion, the landed commit's tree (checked before undo), and
    # every message of each model call, system prompt included.
    """
    ALTER TABLE attempts ADD COLUMN criterion TEXT;
    ALTER TABLE attempts ADD COLUMN landed_tree TEXT;
    ALTER TABLE model_calls ADD COLUMN messages TEXT;
    """,
    # 8: `run --parallel N`: which of the cycle's N candidates an attempt was (its
    # siblings share the run and the cycle); NULL for a cycle with one candidate
    """
    ALTER TABLE attempts ADD COLUMN candidate INTEGER;
    """,
    # 9: every call an agent made to `selfforge mcp`: the tool, its arguments, how it ended
    """
    CREATE TABLE tool_calls (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        outcome TEXT NOT NULL,
        detail TEXT
    );
    """,
    # 10: every step of an exploring proposer (propose/trajectory.py): the model's action,
    # what it saw in return, its tokens and time; `show --steps` and `export --format
    # traces` read them
    """
    CREATE TABLE trajectory (
        id INTEGER PRIMARY KEY, run_id INTEGER, attempt_id INTEGER NOT NULL,
        round INTEGER NOT NULL, step INTEGER NOT NULL, kind TEXT NOT NULL, action TEXT,
        output TEXT, exit_code INTEGER, input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL, seconds REAL,
        created_at REAL NOT NULL
    );
    CREATE INDEX trajectory_attempt ON trajectory(attempt_id, id);
    """,
    # 11: when each check started (wall clock): a cold `selfforge check` runs the base's
    # suite and the candidate's at once, and a check is journaled after it ends
    """
    ALTER TABLE checks ADD COLUMN started_at REAL;
    """,
    # 12: every measurement `run`, `check` and `measure` make (issue 42, point 8): a
    # measure between a base and a candidate (its figures and verdict), or its value at
    # one revision (candidate_commit only, no verdict); the dashboard plots them over the
    # landed commits
    """
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY, run_id INTEGER, attempt_id INTEGER, source TEXT NOT NULL,
        name TEXT NOT NULL, unit TEXT, better TEXT, base_commit TEXT, candidate_commit TEXT,
        base REAL, candidate REAL, change REAL, low REAL, high REAL, runs INTEGER,
        verdict TEXT, seconds REAL, created_at REAL NOT NULL
    );
    CREATE INDEX measurements_attempt ON measurements(attempt_id);
    CREATE INDEX measurements_name ON measurements(name, id);
    """,
]


def statements(script: str) -> list[str]:
    """Split a migration into statements; triggers contain ';' inside BEGIN…END."""
    statements, buffer = [], []
    for line in script.strip().splitlines():
        buffer.append(line)
        joined = "\n".join(buffer).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            statements.append(joined)
            buffer = []
    if "".join(buffer).strip():
        statements.append("\n".join(buffer))
    return statements


@dataclass
class AttemptRecord:
    id: int
    run_id: int
    cycle: int
    task: str
    outcome: str | None
    reason: str | None
    repairs: int
    base_commit: str | None
    commit: str | None
    branch: str | None
    landed: bool
    diff: str | None
    lesson: str | None
    started_at: float
    ended_at: float | None
    reverted_by: str | None = None  # the revert commit, once `selfforge undo` undid it
    candidate: int | None = None  # k of a `run --parallel` cycle's candidates, else None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "cycle": self.cycle,
            "task": self.task,
            "outcome": self.outcome,
            "reason": self.reason,
            "repairs": self.repairs,
            "commit": self.commit,
            "branch": self.branch,
            "landed": self.landed,
            "base_commit": self.base_commit,
            "lesson": self.lesson,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "reverted_by": self.reverted_by,
            "candidate": self.candidate,
        }


@dataclass
class Totals:
    runs: int = 0
    attempts: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


ATTEMPT_COLUMNS = (
    "id, run_id, cycle, task, outcome, reason, repairs, base_commit, commit_sha, branch, "
    "landed, diff, lesson, started_at, ended_at, reverted_by, candidate"
)


def attempt_record(row: sqlite3.Row | tuple[Any, ...]) -> AttemptRecord:
    values = list(row)
    values[10] = bool(values[10])
    return AttemptRecord(*values)
