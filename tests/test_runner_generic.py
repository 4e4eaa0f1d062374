"""Any runner that prints TAP or writes JUnit XML: `[checks] runner = "tap"` or
`runner = "junit"` with the report file. Shown with Node's own TAP and JUnit reporters
(real runners, not selfforge's): a fix lands, a regression is rejected by name, and a
command that writes no report stops at the baseline with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_runner_node import BREAK_SUB, FIX, MATH, NODE_20, PACKAGE, TASK, TESTS

from conftest import cli, directives, log_json, make_repo

pytestmark = pytest.mark.skipif(not NODE_20, reason="needs node 20 or later")

TAP = "node --test --test-reporter=tap"
JUNIT = "node --test --test-reporter=junit --test-reporter-destination=report.xml"
RUNNERS = {
    "tap": (TAP, '\n[checks]\nrunner = "tap"\n'),
    "junit": (JUNIT, '\n[checks]\nrunner = "junit"\njunit = "report.xml"\n'),
}


def _repo(tmp_path: Path, kind: str, command: str | None = None) -> Path:
    test, checks = RUNNERS[kind]
    text = directives(command or test).replace("[checks]\n", checks.lstrip("\n"), 1)
    files = {"package.json": PACKAGE, "math.js": MATH, "test/math.test.js": TESTS}
    return make_repo(tmp_path / "repo", files, text)


def _run(repo: Path, spec: str):
    return cli("run", "--repo", str(repo), "--model", spec, "--task", TASK, "--json")


@pytest.mark.parametrize("kind", sorted(RUNNERS))
def test_a_fix_lands_and_a_regression_is_rejected(tmp_path: Path, script, kind: str) -> None:
    repo = _repo(tmp_path, kind)
    _run(repo, script(propose=[BREAK_SUB]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "subtracts" in attempt["reason"]
    proc = _run(repo, script(propose=[FIX]))
    assert log_json(repo)[-1]["outcome"] == "accepted", proc.stdout + proc.stderr


def test_a_junit_command_that_writes_no_report_stops_at_the_baseline(
    tmp_path: Path, script
) -> None:
    repo = _repo(tmp_path, "junit", "node --test")
    proc = _run(repo, script(propose=[FIX]))
    assert proc.returncode != 0
    assert "without per-test results" in proc.stdout + proc.stderr
    assert "a - b;\nexports.sub" in (repo / "math.js").read_text()
