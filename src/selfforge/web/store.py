"""Read-only queries over the journal for the dashboard.

Every connection is opened with ``mode=ro``: the dashboard cannot write, whatever a
request asks. Pages are keyset-paginated (``id < before``) so a long history costs the
same as a short one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selfforge.errors import SelfforgeError
from selfforge.journal.schema import attempt_record
from selfforge.journal.store import SCHEMA_VERSION
from selfforge.judge.outcome import Outcome
from selfforge.web.views import PAGE, AttemptPage, Filters, Live, Row, RunRow, Summary

_ROW_COLUMNS = (
    "id, run_id, cycle, task, outcome, reason, repairs, landed, commit_sha, started_at, "
    "ended_at, reverted_by"
)


class Store:
    """Where the journal is; each request reads through a connection of its own."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise SelfforgeError(
                f"no journal at {path}: run `selfforge run` in that repository first, "
                "or pass --repo DIR"
            )
        self.path = path
        with self.reader() as reader:
            version = reader.conn.execute("PRAGMA user_version").fetchone()[0]
            self.tables = {r[0] for r in reader.conn.execute("SELECT name FROM sqlite_master")}
        if version > SCHEMA_VERSION:
            raise SelfforgeError(
                f"{path} was written by a newer selfforge (schema {version} > "
                f"{SCHEMA_VERSION}); upgrade selfforge to read it"
            )
        self.has_steps = "steps" in self.tables
        self.has_trajectory = "trajectory" in self.tables
        self.has_measurements = "measurements" in self.tables

    @contextmanager
    def reader(self) -> Iterator[Reader]:
        conn = sqlite3.connect(
            self.path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False
        )
        try:
            yield Reader(conn, self)
        finally:
            conn.close()


class Reader:
    def __init__(self, conn: sqlite3.Connection, store: Store) -> None:
        self.conn = conn
        self.store = store

    def _dicts(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def data_version(self) -> int:
        """Changes whenever another connection (the run) commits."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    # --- timeline --------------------------------------------------------------------

    def timeline(self, filters: Filters, before: int | None = None, limit: int = PAGE) -> list[Row]:
        """Newest first, ``limit`` attempts older than ``before``."""
        clauses, args = filters.where()
        if before is not None:
            clauses.append("id < ?")
            args.append(before)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT {_ROW_COLUMNS} FROM attempts{where} ORDER BY id DESC LIMIT ?"
        return self._with_spend([_row(r) for r in self.conn.execute(sql, (*args, limit))])

    def newer(self, filters: Filters, after: int) -> list[Row]:
        """Attempts after ``after`` that match, oldest first (what a live page lacks)."""
        clauses, args = filters.where()
        clauses.append("id > ?")
        sql = f"SELECT {_ROW_COLUMNS} FROM attempts WHERE {' AND '.join(clauses)} ORDER BY id"
        return self._with_spend([_row(r) for r in self.conn.execute(sql, (*args, after))])

    def rows(self, ids: list[int]) -> list[Row]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        sql = f"SELECT {_ROW_COLUMNS} FROM attempts WHERE id IN ({marks}) ORDER BY id"
        return self._with_spend([_row(r) for r in self.conn.execute(sql, ids)])

    def count(self, filters: Filters) -> int:
        clauses, args = filters.where()
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        return int(self.conn.execute(f"SELECT count(*) FROM attempts{where}", args).fetchone()[0])

    def summary(self, filters: Filters) -> Summary:
        """Accepted, rejected, landed and undone, spend and time of the matching attempts."""
        clauses, args = filters.where()
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        counts = self.conn.execute(
            "SELECT count(*), coalesce(sum(outcome = ?), 0), "
            "coalesce(sum(outcome = ?), 0), coalesce(sum(landed), 0), "
            "coalesce(sum(reverted_by IS NOT NULL), 0), "
            f"coalesce(sum(coalesce(ended_at, started_at) - started_at), 0) FROM attempts{where}",
            (Outcome.ACCEPTED, Outcome.REJECTED, *args),
        ).fetchone()
        spend = self.conn.execute(
            "SELECT coalesce(sum(cost_usd), 0), coalesce(sum(input_tokens + output_tokens), 0) "
            f"FROM model_calls WHERE attempt_id IN (SELECT id FROM attempts{where})",
            args,
        ).fetchone()
        return Summary(*map(int, counts[:5]), float(spend[0]), int(spend[1]), float(counts[5]))

    def _with_spend(self, rows: list[Row]) -> list[Row]:
        if not rows:
            return rows
        marks = ",".join("?" * len(rows))
        spend = {
            r[0]: (r[1], r[2])
            for r in self.conn.execute(
                "SELECT attempt_id, coalesce(sum(cost_usd), 0), "
                "coalesce(sum(input_tokens + output_tokens), 0) FROM model_calls "
                f"WHERE attempt_id IN ({marks}) GROUP BY attempt_id",
                [r.id for r in rows],
            )
        }
        for row in rows:
            row.cost_usd, row.tokens = spend.get(row.id, (0.0, 0))
        return rows

    def run_ids(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT id FROM runs ORDER BY id DESC")]

    # --- one attempt -----------------------------------------------------------------

    def attempt(self, attempt_id: int) -> AttemptPage | None:
        from selfforge.journal.schema import ATTEMPT_COLUMNS

        row = self.conn.execute(
            f"SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE id = ?", (attempt_id,)
        ).fetchone()
        if row is None:
            return None
        steps = (
            self._dicts("SELECT * FROM steps WHERE attempt_id = ? ORDER BY id", (attempt_id,))
            if self.store.has_steps
            else []
        )
        return AttemptPage(
            record=attempt_record(row),
            calls=self._dicts(
                "SELECT * FROM model_calls WHERE attempt_id = ? ORDER BY id", (attempt_id,)
            ),
            checks=self._dicts(
                "SELECT * FROM checks WHERE attempt_id = ? ORDER BY id", (attempt_id,)
            ),
            steps=steps,
            trajectory=self._dicts(
                "SELECT round, step, kind, action, output, exit_code, input_tokens, "
                "output_tokens, seconds FROM trajectory WHERE attempt_id = ? ORDER BY id",
                (attempt_id,),
            )
            if self.store.has_trajectory
            else [],
        )

    # --- runs ------------------------------------------------------------------------

    def runs(self) -> list[RunRow]:
        stage = "stage" if self.store.has_steps else "NULL"
        rows = self.conn.execute(
            f"SELECT id, started_at, ended_at, status, model, goals, stop_reason, {stage} "
            "FROM runs ORDER BY id DESC"
        ).fetchall()
        counts = {
            r[0]: r[1:]
            for r in self.conn.execute(
                "SELECT run_id, count(*), sum(outcome = ?), sum(outcome = ?), "
                "sum(landed), sum(reverted_by IS NOT NULL) FROM attempts GROUP BY run_id",
                (Outcome.ACCEPTED, Outcome.REJECTED),
            )
        }
        spend = {
            r[0]: r[1:]
            for r in self.conn.execute(
                "SELECT run_id, coalesce(sum(input_tokens + output_tokens), 0), "
                "coalesce(sum(cost_usd), 0) FROM model_calls GROUP BY run_id"
            )
        }
        result = []
        for r in rows:
            attempts, accepted, rejected, landed, undone = counts.get(r[0], (0, 0, 0, 0, 0))
            tokens, cost = spend.get(r[0], (0, 0.0))
            result.append(
                RunRow(
                    *r[:5],
                    goals=json.loads(r[5] or "[]"),
                    stop_reason=r[6],
                    stage=r[7],
                    attempts=attempts,
                    accepted=accepted or 0,
                    rejected=rejected or 0,
                    landed=landed or 0,
                    tokens=int(tokens),
                    cost_usd=float(cost),
                    undone=undone or 0,
                )
            )
        return result

    def live(self) -> Live | None:
        """The running run, its open attempt and the stage it is in."""
        stage = "r.stage" if self.store.has_steps else "NULL"
        row = self.conn.execute(
            f"SELECT r.id, {stage}, a.id, a.cycle, a.task FROM runs r LEFT JOIN attempts a "
            "ON a.id = (SELECT max(id) FROM attempts WHERE run_id = r.id AND outcome IS NULL) "
            "WHERE r.status = 'running' ORDER BY r.id DESC LIMIT 1"
        ).fetchone()
        return Live(*row) if row else None

    # --- backlog and lessons ---------------------------------------------------------

    def tasks(self) -> list[dict[str, Any]]:
        """In the planner's order: open tasks by priority, then the rest."""
        if "tasks" not in self.store.tables:
            return []
        rows = self._dicts(
            "SELECT id, text, status, priority, source, attempts, note FROM tasks "
            "ORDER BY status = 'open' DESC, priority, id"
        )
        # One row per task: the same words given again (a repeated --task, a re-plan) add
        # their attempts to the first row, which keeps its place.
        seen: dict[str, dict[str, Any]] = {}
        for row in rows:
            key = " ".join(str(row["text"]).lower().split()).rstrip(".")
            if key in seen:
                seen[key]["attempts"] += row["attempts"] or 0
                seen[key]["times"] += 1
            else:
                seen[key] = {**row, "attempts": row["attempts"] or 0, "times": 1}
        return list(seen.values())

    def lessons(self, before: int | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Lessons newest first, each with the later proposals whose prompt carried it."""
        sql = "SELECT id, run_id, task, outcome, lesson FROM attempts WHERE lesson IS NOT NULL"
        args: tuple[Any, ...] = ()
        if before is not None:
            sql, args = sql + " AND id < ?", (before,)
        lessons = self._dicts(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))
        for lesson in lessons:
            lesson["used_in"] = [
                r[0]
                for r in self.conn.execute(
                    "SELECT DISTINCT attempt_id FROM model_calls WHERE role = 'propose' "
                    "AND attempt_id > ? AND instr(prompt, ?) > 0 ORDER BY attempt_id LIMIT 20",
                    (lesson["id"], lesson["lesson"]),
                )
            ]
        return lessons

    # --- plots -----------------------------------------------------------------------

    def spend_over_time(self) -> list[tuple[float, float, int]]:
        """(time, cost, tokens) per attempt, oldest first; read from an index alone, as
        the calls' rows carry whole prompts."""
        return [
            (r[0], r[1], r[2])
            for r in self.conn.execute(
                "SELECT max(created_at), coalesce(sum(cost_usd), 0), "
                "coalesce(sum(input_tokens + output_tokens), 0) FROM model_calls "
                "GROUP BY attempt_id ORDER BY 1"
            )
        ]

    def outcomes_by_task(self) -> list[tuple[str, str | None]]:
        return [(r[0], r[1]) for r in self.conn.execute("SELECT task, outcome FROM attempts")]

    def seconds_per_stage(self) -> list[tuple[str, float, int]]:
        """(stage, total seconds, count): the run's own steps, or for journals from before
        steps were kept, the checks and model calls."""
        if self.store.has_steps and self.conn.execute("SELECT 1 FROM steps LIMIT 1").fetchone():
            sql = "SELECT name, sum(seconds), count(*) FROM steps GROUP BY name"
        else:
            sql = (
                "SELECT name, sum(duration_s), count(*) FROM checks GROUP BY name UNION ALL "
                "SELECT role, sum(latency_s), count(*) FROM model_calls GROUP BY role"
            )
        return [(r[0], float(r[1] or 0), int(r[2])) for r in self.conn.execute(sql)]

    def measures_over_landed(self) -> dict[str, tuple[str, list[tuple[str, float]]]]:
        """Per measure, its unit and its values over the landed commits in the order
        they landed: the first landing's base, then each landed attempt's candidate (its
        last round's measurement)."""
        if not self.store.has_measurements:
            return {}
        rows = self.conn.execute(
            "SELECT m.name, m.unit, m.base, m.candidate, m.base_commit, a.commit_sha, a.id "
            "FROM measurements m JOIN attempts a ON a.id = m.attempt_id "
            "WHERE a.landed = 1 AND m.verdict IS NOT NULL ORDER BY a.id, m.id"
        ).fetchall()
        found: dict[str, tuple[str, dict[int, tuple[str, float]]]] = {}
        starts: dict[str, tuple[str, float]] = {}
        for name, unit, base, candidate, base_commit, commit, attempt in rows:
            if candidate is None:
                continue
            if name not in found:
                found[name] = (unit or "", {})
                if base is not None:
                    starts[name] = ((base_commit or "")[:10], float(base))
            found[name][1][attempt] = ((commit or "")[:10], float(candidate))
        return {
            name: (unit, ([starts[name]] if name in starts else []) + list(points.values()))
            for name, (unit, points) in found.items()
        }


def _row(r: tuple[Any, ...]) -> Row:
    values = list(r)
    values[7] = bool(values[7])
    return Row(*values)
