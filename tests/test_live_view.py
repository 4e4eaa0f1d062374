"""The live view, captured from a real pseudo-terminal (tmux): during a slow baseline the
screen shows the stage and its clock moving, the cycle, the tokens and cost; at the end
the view is gone and the summary stands. Piped, --quiet and --json runs show no view."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, make_repo

SLOW_TESTS = f"sleep 3 && {sys.executable} -m pytest -q"
pytestmark = [
    pytest.mark.slow,  # a real terminal under tmux, and a baseline that takes 3 s on purpose
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (.ci/run installs it)"),
]


@pytest.fixture
def slow_repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(SLOW_TESTS)
    )


def _frames(command: str, cwd: Path) -> tuple[list[str], str]:
    """Run ``command`` in a tmux pane; return every distinct screen and the last one."""
    socket, session = f"sf-{uuid.uuid4().hex[:8]}", "live"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    script = f"cd {shlex.quote(str(cwd))} && {command}; echo EXIT=$?; sleep 600"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", "110", "-y", "40", script],
        check=True,
        env={**env, "TERM": "xterm-256color"},
    )
    frames: list[str] = []
    try:
        give_up = time.monotonic() + 300  # a guard against a hung run, not a speed check
        while time.monotonic() < give_up:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            if not frames or frames[-1] != screen:
                frames.append(screen)
            if "EXIT=" in screen:
                break
            time.sleep(0.2)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return frames, frames[-1]


def test_the_live_view_moves_during_a_slow_baseline_and_ends_with_a_summary(
    slow_repo: Path, script
) -> None:
    spec = script(propose=[FIX_ADD])
    run = f"{shlex.quote(sys.executable)} -m selfforge run --model {shlex.quote(spec)}"
    frames, last = _frames(run, slow_repo)
    assert "EXIT=0" in last, last
    baseline = [f for f in frames if "baseline: running lint and tests" in f]
    assert len(baseline) >= 2, frames[:5]
    clocks = {line.split()[-1] for f in baseline for line in f.splitlines() if "baseline:" in line}
    assert len(clocks) >= 2, clocks  # the stage's clock moved while the tests ran
    assert any("1 cycle(s)" in f and "tokens" in f and "$0.0000" in f for f in baseline)
    during = [f for f in frames if "cycle 1/1 ·" in f]
    assert during and any("checking: the full test suite (sleep 3 && " in f for f in during)
    assert any("task: Fix add()" in f for f in during)
    assert any(re.search(r"cycle 1/1 · [1-9][\d,]* tokens", f) for f in during)
    assert "run 1 finished" in last and "1 accepted, 0 rejected" in last
    assert re.search(r"model use: [1-9][\d,]* tokens, \$0\.0000; the run took 0:\d\d", last)
    assert "accepted: all gates passed" in last  # the attempt's verdict as one line
    assert "checking:" not in last and "tokens ·" not in last  # the view made way


def test_no_view_when_piped_quiet_or_json(calc_repo: Path, script) -> None:
    piped = cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    assert "\x1b[" not in piped.stdout and "tests" in piped.stdout
    assert "baseline: running" not in piped.stdout
    quiet = cli("run", "-q", "--repo", str(calc_repo), "--model", script(), check=True).stdout
    assert "run 2 finished" in quiet and "cycle 1" not in quiet
    proc = cli("run", "--json", "--repo", str(calc_repo), "--model", script(), check=True)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "begin" and kinds[-1] == "summary"
    assert {"attempt", "step", "outcome"} <= set(kinds)
    assert all(isinstance(e["elapsed_s"], float | int) for e in events)
    assert events[-1]["run_id"] == 3


def test_json_events_in_a_terminal_too(slow_repo: Path, script) -> None:
    run = f"{shlex.quote(sys.executable)} -m selfforge run --json --model " + shlex.quote(
        script(propose=[FIX_ADD])
    )
    _, last = _frames(run + " > events.jsonl", slow_repo)
    assert "EXIT=0" in last and "baseline:" not in last
    lines = (slow_repo / "events.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["attempts"][0]["outcome"] == "accepted"
