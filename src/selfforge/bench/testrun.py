"""The bench's own test runs: the instance's test modules, per-test outcomes via junit XML.

These runs decide FAIL_TO_PASS / PASS_TO_PASS when mining and "solved" after a replay,
independently of the judge being measured.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

PYTHON_WORD = re.compile(r"^python(3(\.\d+)?)?$")


@dataclass
class TestOutcome:
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed/failed/...
    duration_s: float = 0.0
    exit_code: int | None = None
    output: str = ""

    @property
    def passed(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == "passed"}


def resolve_command(test_cmd: str) -> str:
    """`python` in an instance's command means the interpreter running the bench."""
    words = shlex.split(test_cmd)
    words = [sys.executable if PYTHON_WORD.match(w) else w for w in words]
    return shlex.join(words)


def check_command(test_cmd: str, modules: list[str]) -> str:
    """The shell command selfforge's judge runs in the replay clone."""
    return " ".join([resolve_command(test_cmd), "-q", *(shlex.quote(m) for m in modules)])


def run_tests(root: Path, test_cmd: str, modules: list[str], timeout_s: float) -> TestOutcome:
    """Run ``modules`` with ``test_cmd`` (pytest) in ``root``; per-test outcomes by id."""
    with tempfile.TemporaryDirectory(prefix="selfforge-bench-") as tmp:
        xml = Path(tmp) / "junit.xml"
        command = (
            f"{resolve_command(test_cmd)} -q -p no:cacheprovider "
            f"--junit-xml={shlex.quote(str(xml))} " + " ".join(shlex.quote(m) for m in modules)
        )
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PYTEST_ADDOPTS", None)
        started = time.monotonic()
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a timeout kills the whole group
        )
        try:
            output, _ = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            code = None
        duration = time.monotonic() - started
        outcomes = parse_junit(xml) if xml.exists() else {}
    return TestOutcome(outcomes, duration, code, output[-4000:])


def parse_junit(path: Path) -> dict[str, str]:
    try:
        tree = ET.parse(path)
    except ET.ParseError:
        return {}
    outcomes: dict[str, str] = {}
    for case in tree.iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                break
            if child.tag == "skipped":
                outcome = "skipped"
        # A test reported twice (e.g. a teardown error) counts by its worst report.
        if outcomes.get(test_id, "passed") == "passed":
            outcomes[test_id] = outcome
    return outcomes
