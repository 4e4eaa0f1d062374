"""The codebase index: definitions, imports and references of every file, in SQLite.

Kept at ``.selfforge/index.db`` and updated incrementally: a file whose size and
modification time are unchanged is not read; one whose bytes hash the same is not
re-parsed. Only changed files cost a parse, so a warm update is a ``git ls-files``, a
``stat`` per file and a few parses.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from selfforge.context.files import list_files
from selfforge.context.scan import ScanJob, Scanned, scan_all

SCHEMA_VERSION = "5"
# Files modified this close to the last index run are re-hashed even if size and mtime
# match, as git does for its "racily clean" entries.
RACY_NS = 2_000_000_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, hash TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, lang TEXT NOT NULL,
    lines INTEGER NOT NULL, doc TEXT NOT NULL, indexed_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS defs(
    file_id INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, parent TEXT NOT NULL,
    signature TEXT NOT NULL, doc TEXT NOT NULL, line INTEGER NOT NULL,
    end_line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS defs_file ON defs(file_id);
CREATE TABLE IF NOT EXISTS imports(file_id INTEGER NOT NULL, module TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);
-- One row per file, "name count" lines: a row per name would cost a cold index more
-- time inserting than the queries, which read all of them at once anyway, save.
CREATE TABLE IF NOT EXISTS refs(file_id INTEGER PRIMARY KEY, names TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(
    path, symbols, docs, idents, tokenize = "porter unicode61 tokenchars '_'");
"""


@dataclass(frozen=True)
class IndexStats:
    files: int
    parsed: int  # files read and parsed this run
    unchanged: int
    skipped: int  # binary, unreadable or too large
    removed: int
    definitions: int
    seconds: float


@dataclass(frozen=True)
class FileRecord:
    id: int
    path: str
    lang: str
    lines: int
    doc: str


@dataclass(frozen=True)
class DefRecord:
    path: str
    name: str
    kind: str
    parent: str
    signature: str
    doc: str
    line: int
    end_line: int


@dataclass(frozen=True)
class _Stored:
    id: int
    hash: str
    size: int
    mtime_ns: int
    indexed_ns: int


class CodeIndex:
    """An open index database. Use ``open_index`` to get one."""

    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db_path = db_path
        try:
            self.conn = self._connect()
        except sqlite3.DatabaseError:
            # A damaged index is only a cache: start it again rather than fail the run.
            for suffix in ("", "-wal", "-shm"):
                db_path.with_name(db_path.name + suffix).unlink(missing_ok=True)
            self.conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self.conn = conn
            self._ensure_schema()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _ensure_schema(self) -> None:
        version = None
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            version = row[0] if row else None
        except sqlite3.OperationalError:
            pass  # a new database has no meta table yet
        if version not in (None, SCHEMA_VERSION):
            # An index is a cache: an old layout is rebuilt, never migrated.
            for table in ("meta", "files", "defs", "imports", "refs", "search"):
                self.conn.execute(f"DROP TABLE IF EXISTS {table}")
        self.conn.executescript(_SCHEMA)
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()

    # --- updating -------------------------------------------------------------------

    def update(self, repo_root: Path) -> IndexStats:
        """Bring the index in line with the files of ``repo_root``; return what it did."""
        started = time.perf_counter()
        stored = self._stored()
        now_ns = time.time_ns()
        jobs: list[ScanJob] = []
        stats: dict[str, tuple[int, int]] = {}
        unchanged = 0
        top = str(repo_root) + os.sep  # os.lstat of a string: a third of Path's cost
        for path in list_files(repo_root):
            old = stored.pop(path, None)
            try:
                st = os.lstat(top + path)
            except OSError:  # tracked but deleted from the work tree
                if old is not None:
                    stored[path] = old
                continue
            stats[path] = (st.st_size, st.st_mtime_ns)
            if old is not None and _looks_unchanged(old, stats[path]):
                if old.hash:  # a remembered binary has no hash and counts as skipped
                    unchanged += 1
                continue
            jobs.append(ScanJob(str(repo_root), path, old.hash if old else None))
            if old is not None:
                stored[path] = old  # settled below: kept, replaced or dropped
        outcomes: list[str] = []
        with self._transaction():
            for result in scan_all(jobs):
                outcomes.append(self._apply(result, stored.pop(result.path, None), stats, now_ns))
            for gone in stored.values():
                self._delete(gone.id)
        return IndexStats(
            files=self.count("files WHERE lang != 'skipped'"),
            parsed=outcomes.count("parsed"),
            unchanged=unchanged + outcomes.count("unchanged"),
            skipped=outcomes.count("skipped"),
            removed=len(stored),
            definitions=self.count("defs"),
            seconds=time.perf_counter() - started,
        )

    def _apply(
        self, result: Scanned, old: _Stored | None, stats: dict[str, tuple[int, int]], now: int
    ) -> str:
        """Store one scanned file; say whether it was parsed, unchanged or skipped."""
        size, mtime_ns = stats[result.path]
        if result.digest is None:
            # Remembered as skipped so the next run does not read the binary again.
            if old is not None:
                self._delete(old.id)
            self.conn.execute(
                "INSERT INTO files(path, hash, size, mtime_ns, lang, lines, doc, indexed_ns)"
                " VALUES (?, '', ?, ?, 'skipped', 0, '', ?)",
                (result.path, size, mtime_ns, now),
            )
            return "skipped"
        if result.parsed is None and old is not None:
            self.conn.execute(
                "UPDATE files SET size=?, mtime_ns=?, indexed_ns=? WHERE id=?",
                (size, mtime_ns, now, old.id),
            )
            return "unchanged"
        if old is not None:
            self._delete(old.id)
        assert result.parsed is not None
        self._insert(result, size, mtime_ns, now)
        return "parsed"

    def _insert(self, result: Scanned, size: int, mtime_ns: int, now_ns: int) -> None:
        pf = result.parsed
        assert pf is not None and result.digest is not None
        cur = self.conn.execute(
            "INSERT INTO files(path, hash, size, mtime_ns, lang, lines, doc, indexed_ns)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (result.path, result.digest, size, mtime_ns, pf.lang, pf.lines, pf.doc, now_ns),
        )
        file_id = cur.lastrowid
        self.conn.executemany(
            "INSERT INTO defs VALUES (?,?,?,?,?,?,?,?)",
            [
                (file_id, d.name, d.kind, d.parent, d.signature, d.doc, d.line, d.end_line)
                for d in pf.definitions
            ],
        )
        self.conn.executemany(
            "INSERT INTO imports VALUES (?,?)", [(file_id, m) for m in pf.imports]
        )
        # One- and two-letter names are loop variables, not links between files.
        names = "\n".join(f"{n} {c}" for n, c in pf.references.items() if len(n) > 2)
        self.conn.execute("INSERT INTO refs VALUES (?,?)", (file_id, names))
        self.conn.execute(
            "INSERT INTO search(rowid, path, symbols, docs, idents) VALUES (?,?,?,?,?)",
            (file_id, *result.search),
        )

    def _delete(self, file_id: int) -> None:
        for table in ("defs", "imports", "refs"):
            self.conn.execute(f"DELETE FROM {table} WHERE file_id=?", (file_id,))
        self.conn.execute("DELETE FROM search WHERE rowid=?", (file_id,))
        self.conn.execute("DELETE FROM files WHERE id=?", (file_id,))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()

    def _stored(self) -> dict[str, _Stored]:
        rows = self.conn.execute("SELECT path, id, hash, size, mtime_ns, indexed_ns FROM files")
        return {r[0]: _Stored(*r[1:]) for r in rows}

    # --- reading --------------------------------------------------------------------

    def count(self, table: str) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def signature(self) -> str:
        """A digest of every indexed path and content hash: equal digests, equal index."""
        digest = hashlib.blake2b(digest_size=16)
        for path, content_hash in self.conn.execute("SELECT path, hash FROM files ORDER BY path"):
            digest.update(f"{path}\0{content_hash}\n".encode())
        return digest.hexdigest()

    def files(self) -> list[FileRecord]:
        sql = "SELECT id, path, lang, lines, doc FROM files WHERE lang != 'skipped' ORDER BY path"
        rows = self.conn.execute(sql)
        return [FileRecord(*r) for r in rows]

    def definitions(self, path: str | None = None) -> list[DefRecord]:
        sql = (
            "SELECT f.path, d.name, d.kind, d.parent, d.signature, d.doc, d.line, d.end_line"
            " FROM defs d JOIN files f ON f.id = d.file_id"
        )
        args: tuple[str, ...] = ()
        if path is not None:
            sql += " WHERE f.path = ?"
            args = (path,)
        return [DefRecord(*r) for r in self.conn.execute(sql + " ORDER BY f.path, d.line", args)]

    def imports(self) -> list[tuple[str, str]]:
        """(importing path, imported dotted module candidate) pairs."""
        sql = "SELECT f.path, i.module FROM imports i JOIN files f ON f.id = i.file_id"
        return list(self.conn.execute(sql))

    def references(self) -> list[tuple[str, str, int]]:
        """(path, identifier, count) for every identifier that some file defines."""
        defined = {row[0] for row in self.conn.execute("SELECT DISTINCT name FROM defs")}
        sql = "SELECT f.path, r.names FROM refs r JOIN files f ON f.id = r.file_id"
        found: list[tuple[str, str, int]] = []
        for path, names in self.conn.execute(sql):
            for line in names.splitlines():
                name, count = line.split(" ")
                if name in defined:
                    found.append((path, name, int(count)))
        return found


def _looks_unchanged(old: _Stored, stat: tuple[int, int]) -> bool:
    racy = stat[1] >= old.indexed_ns - RACY_NS
    return not racy and stat == (old.size, old.mtime_ns)


def open_index(state_dir: Path) -> CodeIndex:
    """The index database of a repository whose state directory is ``state_dir``."""
    return CodeIndex(state_dir / "index.db")
