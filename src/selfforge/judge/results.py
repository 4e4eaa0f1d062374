"""Per-test results: what the judge reads, and the channel they arrive through.

For pytest, selfforge's plugin (``inject/selfforge_judge_results.py``) sends a record per
test over a Unix socket that this process listens on while the check runs; nothing the
code under test writes to disk afterwards can change them. For ``unittest -v`` the
outcomes are read from the output (and must agree with the exit code).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import secrets
import selectors
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

PLUGIN = "selfforge_judge_results"
PLUGIN_DIR = Path(__file__).parent / "inject"
NODE_REPORTER = "selfforge_node_reporter.mjs"  # for Node's test runner (runners/node.py)
INSIDE_DIR = "/tmp/.selfforge-judge"  # where the channel appears inside the sandbox
# Outcomes that count as a failing test; xfailed is an expected failure, not one.
FAILING = frozenset({"failed", "error"})
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}


@dataclass
class TestReport:
    """Outcomes per test id: passed, failed, error, skipped, xfailed, xpassed."""

    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    collect_errors: dict[str, str] = field(default_factory=dict)  # module → message
    started: bool = True  # the runner reported it started (pytest: the plugin connected)
    finished: bool = True  # ...and reached its end
    exitstatus: int | None = None  # the runner's own status (pytest), when it said
    imports: dict[str, str | None] = field(default_factory=dict)  # module → file it loads
    stop_early_requested: bool = False
    channel_problem: str | None = None  # the results channel was attacked or overflowed

    @property
    def passed(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == "passed"}

    @property
    def failing(self) -> set[str]:
        """Failing tests, counting each module that could not be collected as one."""
        failing = {t for t, o in self.outcomes.items() if o in FAILING}
        return failing | {collect_id(m) for m in self.collect_errors}

    @property
    def collected(self) -> int:
        return len(self.outcomes)

    def outcome(self, test: str) -> str | None:
        """A test's outcome; a module's collection id (``m.py::<collection>``) is
        "error" while it fails to import, and once it imports, "passed" when every test
        it holds ran without failing (a new feature with its tests, written tests first)."""
        if test in self.outcomes:
            return self.outcomes[test]
        module = test.split("::")[0]
        if module in self.collect_errors or WHOLE_SUITE in self.collect_errors:
            return "error"
        if test != collect_id(module):
            return None
        held = [
            o
            for t, o in self.outcomes.items()
            if (module == WHOLE_SUITE and not t.startswith(DOCTESTS)) or t.split("::")[0] == module
        ]
        if not held:
            return None
        # skipped and xfailed tests say nothing against it; one failing test does
        return "failed" if any(o in FAILING for o in held) else "passed"

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        if self.collect_errors:
            counts["collection errors"] = len(self.collect_errors)
        return counts


# The collection error of a suite that did not build at all (a Rust crate that does not
# compile): it stands for every test, and once the suite builds it passes when every
# test does.
WHOLE_SUITE = "<crate>"
# ... except its doctests, examples in the documentation that a newer toolchain often
# fails to compile all along (xmlparser's, at every commit): only named ones count.
DOCTESTS = "doc::"


def collect_id(module: str) -> str:
    """The test id a module that fails to collect counts as."""
    return f"{module}::<collection>"


class Channel:
    """A Unix socket the sandboxed pytest reports to; also carries the plugin file.

    Its directory appears read-only at ``INSIDE_DIR`` inside the sandbox. What arrives is
    hostile input: one reader thread serves every connection (no thread per connection),
    the bytes, records and connections it takes are bounded, and only a connection whose
    first record carries the run's secret is heard. The secret reaches selfforge's plugin
    through an inherited file descriptor (``secret_fd``), never a name or path a check
    could read first. Whatever goes wrong is a ``problem`` the verdict names.
    """

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="selfforge-judge-"))
        for name in (f"{PLUGIN}.py", NODE_REPORTER):
            shutil.copy2(PLUGIN_DIR / name, self.dir / name)
        self.records: list[dict] = []
        self.problem: str | None = None
        self.ignored = 0  # records from connections that did not authenticate
        self.bytes = 0
        self._token = secrets.token_hex(16)
        self.secret_fd = _secret_fd(self._token)
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.dir / "results.sock"))
        self._server.listen(MAX_CONNECTIONS)
        self._server.setblocking(False)
        self._wake_r, self._wake_w = os.pipe()
        self._reader = threading.Thread(target=self._serve, daemon=True)
        self._reader.start()

    def socket_path(self, sandboxed: bool) -> str:
        return f"{INSIDE_DIR}/results.sock" if sandboxed else str(self.dir / "results.sock")

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
_EVENTS = {"hello", "start", "collected", "collect_error", "test", "finish"}
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
        duration = record.get("duration", 0)
        if not isinstance(duration, int | float) or not 0 <= float(duration) < 1e7:
            raise ValueError("duration is not a number of seconds")
    for key in ("exitstatus", "n", "collected", "testsfailed", "pid"):
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


def report_from_records(records: list[dict], root: Path) -> TestReport | None:
    starts = [r for r in records if r.get("ev") == "start"]
    if not starts:
        return None
    report = TestReport(started=True, finished=False)
    prefix = _node_prefix(Path(str(starts[0].get("rootdir", root))), root)
    report.imports = dict(starts[0].get("imports") or {})
    report.stop_early_requested = any(s.get("stop_early_requested") for s in starts)
    finishes = [r for r in records if r.get("ev") == "finish"]
    # Every session that started must finish; the worst status is the run's.
    report.finished = len(finishes) >= len(starts)
    if finishes:
        report.exitstatus = max(int(f.get("exitstatus", 0)) for f in finishes)
    for r in records:
        ev = r.get("ev")
        if ev == "collect_error":
            module = prefix + str(r.get("id") or "")
            report.collect_errors[module] = _first_line(str(r.get("msg", "")))
        elif ev == "test":
            test = prefix + str(r.get("id", ""))
            outcome = str(r.get("outcome", "failed"))
            if r.get("when") != "call":  # a setup/teardown problem is an error
                outcome = {"failed": "error", "passed": "passed"}.get(outcome, outcome)
                if outcome == "passed" and test in report.outcomes:
                    continue
            previous = report.outcomes.get(test)
            # A test reported twice keeps its worst outcome: a forged "passed" line cannot
            # hide a real failure.
            if previous is None or _RANK.get(outcome, 4) >= _RANK.get(previous, 4):
                report.outcomes[test] = outcome
            report.durations[test] = report.durations.get(test, 0.0) + float(
                r.get("duration") or 0.0
            )
            if r.get("msg"):
                report.messages[test] = _first_line(str(r["msg"]))
    return report


def _node_prefix(rootdir: Path, root: Path) -> str:
    """Node ids are relative to pytest's rootdir; ours to the tree's root."""
    try:
        rel = rootdir.resolve().relative_to(root.resolve())
    except ValueError:
        return ""
    return "" if str(rel) == "." else f"{rel.as_posix()}/"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return ""


# --- unittest -v --------------------------------------------------------------------------

_UNITTEST_LINE = re.compile(
    r"^(?P<name>\w+) \((?P<where>[\w.]+)\)[^\n]*?(?:\n[^\n]*?)?\s\.\.\.\s"
    r"(?P<status>ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
    re.M,
)
_UNITTEST_BLOCK = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)", re.M)
_UNITTEST_STATUS = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "skipped": "skipped",
    "expected failure": "xfailed",
    "unexpected success": "failed",
}


def parse_unittest(output: str) -> TestReport | None:
    """Per-test outcomes from ``python -m unittest -v`` output; None if it has none."""
    report = TestReport()
    for m in _UNITTEST_LINE.finditer(output):
        where = m["where"]
        test_id = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
        report.outcomes[test_id] = _UNITTEST_STATUS[m["status"]]
    if not report.outcomes:
        return None
    blocks = list(_UNITTEST_BLOCK.finditer(output))
    for i, m in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(output)
        body = [ln for ln in output[m.end() : end].splitlines() if ln.strip() and ln[0] != " "]
        body = [
            ln
            for ln in body
            if not ln.startswith(("---", "===", "Traceback", "Ran ", "FAILED", "OK"))
        ]
        where = m["where"]
        test_id = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
        if body:
            report.messages[test_id] = body[-1][:300]
    return report
