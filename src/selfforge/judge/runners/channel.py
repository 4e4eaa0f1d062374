"""The channel per-test results arrive through: a Unix socket the sandboxed test process
reports to, guarded like a server's port (bounded bytes, records and connections; only a
connection that shows the run's secret is heard). ``results.report_from_records`` turns
what it heard into a ``TestReport``."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import selectors
import shutil
import socket
import tempfile
import threading
from pathlib import Path

from selfforge.judge.runners.results import (
    INSIDE_DIR,
    NODE_REPORTER,
    PLUGIN,
    PLUGIN_DIR,
    PROBES,
    TestReport,
    report_from_records,
)

PREFIX = "selfforge-judge-"  # in the system's temporary folder
SHORT_PREFIX = "judge-"  # in the run's scratch folder, where the path must stay short
SOCKET = "sock"
SOCKET_PLACE = f"/{SHORT_PREFIX}xxxxxxxx/{SOCKET}"  # what mkdtemp and the socket add
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes with its NUL


class Channel:
    """A Unix socket the sandboxed pytest reports to; also carries the plugin file.

    Its directory appears read-only at ``INSIDE_DIR`` inside the sandbox. What arrives is
    hostile input: one reader thread serves every connection (no thread per connection),
    the bytes, records and connections it takes are bounded, and only a connection whose
    first record carries the run's secret is heard. The secret reaches selfforge's plugin
    through an inherited file descriptor (``secret_fd``), never a name or path a check
    could read first. Whatever goes wrong is a ``problem`` the verdict names.
    """

    def __init__(self, scratch: Path | None = None) -> None:
        # In the run's scratch folder (tmp/ of the trees folder, trees.py) where the
        # socket's path fits, so that what a killed run leaves is found and removed
        # (recovery, `selfforge clean`); else in the system's temporary folder.
        fits = scratch is not None and len(str(scratch)) + len(SOCKET_PLACE) <= SOCKET_PATH_MAX
        where = (SHORT_PREFIX, scratch) if fits else (PREFIX, None)
        self.dir = Path(tempfile.mkdtemp(prefix=where[0], dir=where[1]))
        for name in (f"{PLUGIN}.py", f"{PROBES}.py", NODE_REPORTER):
            shutil.copy2(PLUGIN_DIR / name, self.dir / name)
        self.records: list[dict] = []
        self.problem: str | None = None
        self.ignored = 0  # records from connections that did not authenticate
        self.bytes = 0
        self._token = secrets.token_hex(16)
        self.secret_fd = _secret_fd(self._token)
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.dir / SOCKET))
        self._server.listen(MAX_CONNECTIONS)
        self._server.setblocking(False)
        self._wake_r, self._wake_w = os.pipe()
        self._reader = threading.Thread(target=self._serve, daemon=True)
        self._reader.start()

    def socket_path(self, sandboxed: bool) -> str:
        return f"{INSIDE_DIR}/{SOCKET}" if sandboxed else str(self.dir / SOCKET)

    def plugin_path(self, sandboxed: bool) -> str:
        return INSIDE_DIR if sandboxed else str(self.dir)

    def _serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._server, selectors.EVENT_READ, None)
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            conns: dict[socket.socket, _Conn] = {}
            total = 0
            stopping = False
            while True:
                events = sel.select(timeout=None if not stopping else 0)
                if not events and stopping:
                    break
                for key, _ in events:
                    if key.data == "wake":
                        os.read(self._wake_r, 64)
                        stopping = True
                    elif key.fileobj is self._server:
                        total = self._accept(sel, conns, total)
                    else:
                        self._receive(sel, conns, key.fileobj)  # type: ignore[arg-type]
            for conn in list(conns):
                self._drop(sel, conns, conn)

    def _accept(self, sel: selectors.BaseSelector, conns: dict, total: int) -> int:
        try:
            conn, _ = self._server.accept()
        except OSError:
            return total
        total += 1
        if total > MAX_CONNECTIONS:
            self._fail(f"more than {MAX_CONNECTIONS} connections to the results channel")
            conn.close()
            return total
        conn.setblocking(False)
        conns[conn] = _Conn()
        sel.register(conn, selectors.EVENT_READ, "conn")
        return total

    def _receive(self, sel: selectors.BaseSelector, conns: dict, conn: socket.socket) -> None:
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self._line(conns[conn], conns[conn].buffer, final=True)
            self._drop(sel, conns, conn)
            return
        self.bytes += len(chunk)
        if self.bytes > MAX_BYTES:
            self._fail(f"more than {MAX_BYTES // 2**20} MiB on the results channel")
            self._drop(sel, conns, conn)
            return
        state = conns[conn]
        state.buffer += chunk
        *lines, state.buffer = state.buffer.split(b"\n")
        if len(state.buffer) > MAX_LINE:
            self._fail(f"a record longer than {MAX_LINE // 1024} KiB on the results channel")
            state.buffer = b""
        for line in lines:
            self._line(state, line)

    def _drop(self, sel: selectors.BaseSelector, conns: dict, conn: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(conn)
        conns.pop(conn, None)
        conn.close()

    def _line(self, state: _Conn, line: bytes, final: bool = False) -> None:
        if not line.strip():
            return
        try:
            record = validate(json.loads(line))
        except (ValueError, TypeError) as exc:
            self._fail(f"an invalid record on the results channel ({exc})")
            return
        if not state.heard:
            if record.get("ev") == "hello" and hmac.compare_digest(
                str(record.get("token", "")), self._token
            ):
                state.heard = True
            else:
                self.ignored += 1
                self._fail("a record from a process that is not selfforge's plugin (forged)")
            return
        with self._lock:
            if len(self.records) >= MAX_RECORDS:
                self._fail(f"more than {MAX_RECORDS} records on the results channel")
                return
            self.records.append(record)

    def _fail(self, why: str) -> None:
        with self._lock:
            self.problem = self.problem or why

    def close(self) -> None:
        """After the command ended (its processes are gone): drain and stop listening."""
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        self._reader.join(timeout=5)
        for fd in (self._wake_r, self._wake_w, self.secret_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self._server.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def report(self, root: Path) -> TestReport | None:
        """The pytest report from the records, test ids relative to ``root``."""
        with self._lock:
            records, problem = list(self.records), self.problem
        report = report_from_records(records, root)
        if problem is not None:
            report = report or TestReport(started=False, finished=False)
            report.channel_problem = problem
        return report


MAX_BYTES = 64 * 2**20
MAX_RECORDS = 500_000
MAX_CONNECTIONS = 64
MAX_LINE = 256 * 1024
MAX_WHERE = 16  # files a skip's origin names (the plugin's _MAX_WHERE)
MAX_WHERE_PATH = 4096
MAX_SECONDS = 1e7  # a longer test duration is a clock the test moved (unknown)
_EVENTS = {"hello", "start", "collected", "collect_error", "collect_skip", "test", "finish"}
_OUTCOMES = {"passed", "failed", "skipped", "error", "xfailed", "xpassed"}


class _Conn:
    def __init__(self) -> None:
        self.buffer = b""
        self.heard = False  # its first record carried the secret


def _secret_fd(token: str) -> int:
    """A descriptor holding the secret, readable at offset 0 by every process it is passed
    to (a pipe would give it to the first reader only): a memfd, or an unlinked file."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("selfforge-judge-secret", 0)
    else:
        fd, name = tempfile.mkstemp(prefix="selfforge-secret-")
        os.unlink(name)
    os.write(fd, token.encode())
    return fd


def seconds(duration: object) -> float | None:
    """A test's duration, None when unknown. A test that freezes or mocks the clock
    (freezegun, time-machine, a patched ``time.time``) makes pytest measure -1e9 s, 1e9 s
    or NaN: data the test controls, not an attack, so it is unknown rather than a misused
    channel. Only a value no plugin sends (a string, a list) is invalid."""
    if duration is None:
        return None
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        raise ValueError("duration is not a number of seconds")
    return float(duration) if 0 <= duration < MAX_SECONDS else None  # NaN compares False


def validate(record: object) -> dict:
    """One record as the plugin writes it, or ValueError naming what is wrong."""
    if not isinstance(record, dict):
        raise ValueError("not an object")
    ev = record.get("ev")
    if ev not in _EVENTS:
        raise ValueError(f"unknown event {str(ev)[:40]!r}")
    for key in ("id", "msg", "rootdir", "when", "token"):
        value = record.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > 8192):
            raise ValueError(f"{key} is not a string of at most 8 KiB")
    if ev == "test":
        if record.get("outcome") not in _OUTCOMES:
            raise ValueError(f"unknown outcome {str(record.get('outcome'))[:40]!r}")
        record["duration"] = seconds(record.get("duration"))
    where = record.get("where")
    if where is not None and not (
        isinstance(where, list)
        and len(where) <= MAX_WHERE
        and all(isinstance(p, str) and len(p) <= MAX_WHERE_PATH for p in where)
    ):
        raise ValueError(f"where is not a list of at most {MAX_WHERE} paths")
    for key in ("exitstatus", "n", "collected", "testsfailed", "pid", "runs"):
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{key} is not an integer")
    imports = record.get("imports")
    if imports is not None and not (
        isinstance(imports, dict)
        and all(
            isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in imports.items()
        )
    ):
        raise ValueError("imports is not a map of names to paths")
    return record
