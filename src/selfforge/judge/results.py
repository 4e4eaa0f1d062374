"""Per-test results: what the judge reads, and the channel they arrive through.

For pytest, selfforge's plugin (``inject/selfforge_judge_results.py``) sends a record per
test over a Unix socket that this process listens on while the check runs; nothing the
code under test writes to disk afterwards can change them. For ``unittest -v`` the
outcomes are read from the output (and must agree with the exit code).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

PLUGIN = "selfforge_judge_results"
PLUGIN_DIR = Path(__file__).parent / "inject"
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
        it holds passed (a new feature with its tests, written tests first)."""
        if test in self.outcomes:
            return self.outcomes[test]
        module = test.split("::")[0]
        if module in self.collect_errors:
            return "error"
        if test != collect_id(module):
            return None
        held = [o for t, o in self.outcomes.items() if t.split("::")[0] == module]
        if not held:
            return None
        return "passed" if all(o == "passed" for o in held) else "failed"

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        if self.collect_errors:
            counts["collection errors"] = len(self.collect_errors)
        return counts


def collect_id(module: str) -> str:
    """The test id a module that fails to collect counts as."""
    return f"{module}::<collection>"


class Channel:
    """A Unix socket the sandboxed pytest reports to; also carries the plugin file.

    Its directory appears read-only at ``INSIDE_DIR`` inside the sandbox.
    """

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="selfforge-judge-"))
        shutil.copy2(PLUGIN_DIR / f"{PLUGIN}.py", self.dir / f"{PLUGIN}.py")
        self.records: list[dict] = []
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.dir / "results.sock"))
        self._server.listen(16)
        self._stop = threading.Event()
        self._readers: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def socket_path(self, sandboxed: bool) -> str:
        return f"{INSIDE_DIR}/results.sock" if sandboxed else str(self.dir / "results.sock")

    def plugin_path(self, sandboxed: bool) -> str:
        return INSIDE_DIR if sandboxed else str(self.dir)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._start_reader(conn)
            if self._stop.is_set():  # woken by close(): take what is still queued, stop
                self._server.setblocking(False)
                with contextlib.suppress(OSError):
                    while True:
                        self._start_reader(self._server.accept()[0])
                return

    def _start_reader(self, conn: socket.socket) -> None:
        conn.setblocking(True)
        reader = threading.Thread(target=self._read, args=(conn,), daemon=True)
        reader.start()
        self._readers.append(reader)

    def _read(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._keep(line)
        if buffer:
            self._keep(buffer)

    def _keep(self, line: bytes) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            return
        if isinstance(record, dict):
            with self._lock:
                self.records.append(record)

    def close(self) -> None:
        """After the command ended (its processes are gone): drain and stop listening.

        The acceptor blocks in ``accept`` (no polling timeout, which cost every check up
        to its length); a connection of our own wakes it to stop."""
        self._stop.set()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as wake:
            wake.connect(str(self.dir / "results.sock"))
        self._acceptor.join(timeout=2)
        for reader in self._readers:
            reader.join(timeout=2)
        with contextlib.suppress(OSError):
            self._server.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def report(self, root: Path) -> TestReport | None:
        """The pytest report from the records, test ids relative to ``root``."""
        with self._lock:
            records = list(self.records)
        return report_from_records(records, root)


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
