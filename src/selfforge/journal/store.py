"""The journal: every run, attempt, model call and check, in SQLite (WAL) at
``.selfforge/journal.db``. Schema changes are numbered migrations on ``user_version``
(``journal_schema.py``); the steps and the running stage that the dashboard shows are
written by ``progress.py``.

An attempt's outcome is one of the judge's words (``judge.outcome.Outcome``, a ``str``),
given by the caller: the journal, a part below the judge, stores it and spells none
itself (nor imports it: not even for a type).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selfforge.journal.schema import (
    ATTEMPT_COLUMNS,
    MIGRATIONS,
    AttemptRecord,
    Totals,
    attempt_record,
    statements,
)

__all__ = ["AttemptRecord", "Journal", "Totals"]

SCHEMA_VERSION = len(MIGRATIONS)
RUN_COLUMNS = (
    "id, started_at, ended_at, status, pid, base_branch, base_commit, model, goals, "
    "land_mode, stop_reason"
)


class Journal:
    """A connection to one repository's journal."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _migrate(self) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            from selfforge.errors import SelfforgeError

            raise SelfforgeError(
                f"{self.path} was written by a newer selfforge (schema {version} > "
                f"{SCHEMA_VERSION}); upgrade selfforge to read it"
            )
        for number in range(version, SCHEMA_VERSION):
            with self.transaction() as conn:
                for statement in statements(MIGRATIONS[number]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1}")

    # --- runs ------------------------------------------------------------------------

    def start_run(
        self,
        *,
        pid: int,
        base_branch: str | None,
        base_commit: str,
        model: str,
        goals: list[str],
        land_mode: str,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO runs (started_at, status, pid, base_branch, base_commit, model, goals,"
            " land_mode) VALUES (?, 'running', ?, ?, ?, ?, ?, ?)",
            (time.time(), pid, base_branch, base_commit, model, json.dumps(goals), land_mode),
        )
        return int(cur.lastrowid or 0)

    def end_run(self, run_id: int, status: str, stop_reason: str, *, left_open: str) -> int:
        """Close the run, and any attempt it left open (it ended mid-attempt) with the
        outcome ``left_open`` (an error); returns how many attempts that closed."""
        # A reason that already begins with the status ("stopped: the run's budget…")
        # is not prefixed twice.
        said = stop_reason if stop_reason.startswith(f"{status}:") else f"{status}: {stop_reason}"
        with self.transaction() as conn:
            closed = conn.execute(
                "UPDATE attempts SET outcome = ?, reason = ?, ended_at = ? "
                "WHERE run_id = ? AND outcome IS NULL",
                (left_open, f"{said}; nothing was landed", time.time(), run_id),
            ).rowcount
            conn.execute(
                "UPDATE runs SET ended_at = ?, status = ?, stop_reason = ? WHERE id = ?",
                (time.time(), status, stop_reason, run_id),
            )
        return closed

    def close_orphan_attempts(self, *, left_open: str) -> int:
        """Attempts left open by a run that is already closed (older journals had these),
        closed with the outcome ``left_open`` (an error)."""
        return self.conn.execute(
            "UPDATE attempts SET outcome = ?, reason = 'interrupted: nothing was landed',"
            " ended_at = ? WHERE outcome IS NULL AND run_id IN "
            "(SELECT id FROM runs WHERE status != 'running')",
            (left_open, time.time()),
        ).rowcount

    def running_runs(self) -> list[tuple[int, int | None]]:
        rows = self.conn.execute("SELECT id, pid FROM runs WHERE status = 'running'")
        return [(int(r[0]), r[1]) for r in rows]

    def run_info(self, run_id: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None:
            return None
        keys = [c.strip() for c in RUN_COLUMNS.split(",")]
        info = dict(zip(keys, row, strict=True))
        info["goals"] = json.loads(info["goals"])
        return info

    def last_run_id(self) -> int | None:
        row = self.conn.execute("SELECT max(id) FROM runs").fetchone()
        return row[0]

    # --- attempts --------------------------------------------------------------------

    def start_attempt(
        self,
        run_id: int,
        cycle: int,
        task: str,
        base_commit: str,
        criterion: str = "",
        candidate: int | None = None,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO attempts (run_id, cycle, task, base_commit, started_at, criterion,"
            " candidate) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (run_id, cycle, task, base_commit, time.time(), criterion or None, candidate),
        )
        return int(cur.lastrowid or 0)

    def finish_attempt(
        self,
        attempt_id: int,
        *,
        outcome: str,
        reason: str,
        repairs: int,
        commit: str | None = None,
        branch: str | None = None,
        landed: bool = False,
        diff: str | None = None,
        tree: str | None = None,
    ) -> None:
        self.conn.execute(
            "UPDATE attempts SET outcome = ?, reason = ?, repairs = ?, commit_sha = ?, "
            "branch = ?, landed = ?, diff = ?, ended_at = ?, landed_tree = ? WHERE id = ?",
            (
                outcome,
                reason,
                repairs,
                commit,
                branch,
                int(landed),
                diff,
                time.time(),
                tree,
                attempt_id,
            ),
        )

    def attempt_extra(self, attempt_id: int) -> dict[str, Any]:
        """The acceptance criterion and the tree recorded when the attempt's commit landed."""
        row = self.conn.execute(
            "SELECT criterion, landed_tree FROM attempts WHERE id = ?", (attempt_id,)
        ).fetchone()
        return {"criterion": row[0], "landed_tree": row[1]} if row else {}

    def mark_reverted(self, attempt_id: int, revert_commit: str) -> None:
        self.conn.execute(
            "UPDATE attempts SET reverted_by = ? WHERE id = ?", (revert_commit, attempt_id)
        )

    def set_lesson(self, attempt_id: int, lesson: str) -> None:
        self.conn.execute("UPDATE attempts SET lesson = ? WHERE id = ?", (lesson, attempt_id))

    def attempts(self, run_id: int | None = None, last: int | None = None) -> list[AttemptRecord]:
        """Attempts oldest first: all, one run's, or only the ``last`` few."""
        sql = f"SELECT {ATTEMPT_COLUMNS} FROM attempts"
        args: tuple[Any, ...] = ()
        if run_id is not None:
            sql, args = sql + " WHERE run_id = ?", (run_id,)
        sql += " ORDER BY id DESC" + (f" LIMIT {int(last)}" if last is not None else "")
        return [attempt_record(r) for r in self.conn.execute(sql, args)][::-1]

    def attempt(self, attempt_id: int) -> AttemptRecord | None:
        row = self.conn.execute(
            f"SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE id = ?", (attempt_id,)
        ).fetchone()
        return attempt_record(row) if row else None

    # --- model calls and checks --------------------------------------------------------

    def record_call(
        self,
        *,
        run_id: int | None,
        attempt_id: int | None,
        role: str,
        model: str,
        prompt: str,
        response: str | None,
        error: str | None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cached_tokens: int = 0,
        thinking_tokens: int = 0,
        cost_usd: float | None = None,
        latency_s: float = 0.0,
        sections: dict[str, int] | None = None,
        note: str | None = None,
        messages: list[dict[str, str]] | None = None,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO model_calls (run_id, attempt_id, role, model, prompt, response, error,"
            " input_tokens, output_tokens, cached_tokens, thinking_tokens, cost_usd, latency_s,"
            " sections, created_at, note, messages)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                attempt_id,
                role,
                model,
                prompt,
                response,
                error,
                input_tokens,
                output_tokens,
                cached_tokens,
                thinking_tokens,
                cost_usd,
                latency_s,
                json.dumps(sections) if sections else None,
                time.time(),
                note,
                json.dumps(messages) if messages else None,
            ),
        )
        return int(cur.lastrowid or 0)

    def calls(self, attempt_id: int) -> list[dict[str, Any]]:
        cur = self.conn.execute(
            "SELECT * FROM model_calls WHERE attempt_id = ? ORDER BY id", (attempt_id,)
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def record_check(
        self,
        *,
        run_id: int | None,
        attempt_id: int | None,
        round_: int,
        name: str,
        command: str | None,
        exit_code: int | None,
        passed: bool,
        timed_out: bool,
        duration_s: float,
        output: str,
        summary: dict[str, Any] | None = None,
        started_at: float | None = None,
    ) -> None:
        """``started_at`` (wall clock): when the check began, if not ``duration_s`` ago."""
        now = time.time()
        self.conn.execute(
            "INSERT INTO checks (run_id, attempt_id, round, name, command, exit_code, passed,"
            " timed_out, duration_s, output, summary, created_at, started_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                attempt_id,
                round_,
                name,
                command,
                exit_code,
                int(passed),
                int(timed_out),
                duration_s,
                output,
                json.dumps(summary) if summary else None,
                now,
                started_at if started_at is not None else now - (duration_s or 0.0),
            ),
        )

    def checks(self, attempt_id: int) -> list[dict[str, Any]]:
        cur = self.conn.execute(
            "SELECT * FROM checks WHERE attempt_id = ? ORDER BY id", (attempt_id,)
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    # --- measurements --------------------------------------------------------------------

    def record_measurement(
        self,
        *,
        source: str,
        figures: dict[str, Any],
        base_commit: str | None,
        candidate_commit: str | None,
        run_id: int | None = None,
        attempt_id: int | None = None,
    ) -> int:
        """One measurement (``source``: run, check or measure). ``figures``: a measure's
        comparison as ``measure --json`` prints it (name, unit, better, base, candidate,
        change, low, high, runs, verdict, seconds), or a value at one revision (name,
        unit, value)."""
        value = figures.get("candidate", figures.get("value"))
        cur = self.conn.execute(
            "INSERT INTO measurements (run_id, attempt_id, source, name, unit, better,"
            " base_commit, candidate_commit, base, candidate, change, low, high, runs, verdict,"
            " seconds, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                attempt_id,
                source,
                figures["name"],
                figures.get("unit"),
                figures.get("better"),
                base_commit,
                candidate_commit,
                figures.get("base"),
                value,
                figures.get("change"),
                figures.get("low"),
                figures.get("high"),
                figures.get("runs"),
                figures.get("verdict"),
                figures.get("seconds"),
                time.time(),
            ),
        )
        return int(cur.lastrowid or 0)

    def measurements(
        self, attempt_id: int | None = None, last: int | None = None
    ) -> list[dict[str, Any]]:
        """Measurements oldest first: all, one attempt's, or only the ``last`` few."""
        sql, args = "SELECT * FROM measurements", ()
        if attempt_id is not None:
            sql, args = sql + " WHERE attempt_id = ?", (attempt_id,)
        sql += " ORDER BY id DESC" + (f" LIMIT {int(last)}" if last is not None else "")
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur][::-1]

    def run_spend(self, run_id: int) -> tuple[float, int]:
        row = self.conn.execute(
            "SELECT coalesce(sum(cost_usd), 0), coalesce(sum(input_tokens + output_tokens), 0)"
            " FROM model_calls WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        return float(row[0]), int(row[1])

    def totals(self) -> Totals:
        totals = Totals()
        totals.runs = self.conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        for outcome, count in self.conn.execute(
            "SELECT coalesce(outcome, 'open'), count(*) FROM attempts GROUP BY 1"
        ):
            totals.outcomes[outcome] = count
            totals.attempts += count
        row = self.conn.execute(
            "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),"
            " coalesce(sum(cost_usd), 0) FROM model_calls"
        ).fetchone()
        totals.calls, totals.input_tokens, totals.output_tokens = row[0], row[1], row[2]
        totals.cost_usd = float(row[3])
        return totals

    # --- key/value ---------------------------------------------------------------------

    def record_tool_call(self, tool: str, arguments: str, outcome: str, detail: str) -> None:
        """One call an agent made through ``selfforge mcp`` (secrets masked by the caller)."""
        self.conn.execute(
            "INSERT INTO tool_calls (at, tool, arguments, outcome, detail) VALUES (?, ?, ?, ?, ?)",
            (time.time(), tool, arguments, outcome, detail),
        )

    def tool_calls(self) -> list[dict[str, object]]:
        rows = self.conn.execute(
            "SELECT id, at, tool, arguments, outcome, detail FROM tool_calls ORDER BY id"
        )
        keys = ("id", "at", "tool", "arguments", "outcome", "detail")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
