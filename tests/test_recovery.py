"""A run killed at any instant leaves the user's repository as it was; the next run
recovers, says so, and finishes the job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    CALC,
    FIX_ADD,
    TEST_CALC,
    cli,
    directives,
    git,
    group_running,
    left_worktrees,
    log_json,
    make_repo,
    snapshot,
    trees_dir,
    wait_for,
)

# Sleeps only inside an attempt's worktree (not the baseline's), when asked to (SLOW_TEST
# reaches the sandbox because the directives list it), and first says so: a marker file in
# that worktree, the point a test waits for before it kills the run.
SLOW_MARKER = "slow-test-started"
SLOW_TEST = f"""
import os, time
from pathlib import Path

def test_slow_in_attempts():
    if Path.cwd().name.startswith("attempt") and os.environ.get("SLOW_TEST"):
        Path("{SLOW_MARKER}").write_text(str(os.getpid()))
        time.sleep(float(os.environ["SLOW_TEST"]))
"""


def _lock_record(repo: Path) -> dict:
    try:
        return json.loads((repo / ".selfforge" / "run.lock").read_text() or "{}")
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _found(root: Path, name: str) -> list[Path]:
    """Files called ``name`` under ``root``; os.walk passes over folders a running check
    removes while it looks (rglob would raise)."""
    return [Path(top) / name for top, _, files in os.walk(root) if name in files]


def test_sigkill_during_tests_then_recovery_lands_the_fix(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_slow.py": SLOW_TEST},
        directives(env=("SLOW_TEST",)),  # the checks' environment is an allowlist
    )
    before = snapshot(repo)
    spec = script(propose=[FIX_ADD])
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfforge", "run", "--repo", str(repo), "--model", spec],
        env={**os.environ, "SLOW_TEST": "60"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Killed while the attempt's tests run: once its slow test has started (wherever the
    # run keeps its worktrees), not after a guessed while: the baseline may still be running
    # then on a loaded machine, before any attempt exists to be interrupted.
    markers: list[Path] = []
    wait_for(lambda: markers.extend(_found(trees_dir(repo), SLOW_MARKER)) or markers)
    orphan_group = _lock_record(repo)["child_pgid"]
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    assert snapshot(repo) == before  # nothing of the user's changed
    assert markers[0].parent.is_dir()  # the dead run left its worktree behind

    status = cli("status", "--repo", str(repo), check=True).stdout
    assert "stopped without cleaning up" in status and "running:    no" in status

    second = cli("run", "--repo", str(repo), "--model", spec)
    assert second.returncode == 0, second.stderr
    assert "recovered" in second.stdout
    assert "interrupted" in second.stdout
    assert left_worktrees(repo) == (["attempt", "baseline"], 2)  # kept, reset when used
    assert "selfforge/tmp/" not in git(repo, "branch", "--list")
    assert not group_running(orphan_group), "the killed run's test processes were left running"
    attempts = log_json(repo)
    assert [a["outcome"] for a in attempts] == ["error", "accepted"]
    assert "interrupted" in attempts[0]["reason"]
    assert "return a + b" in (repo / "calc.py").read_text()
    assert git(repo, "status", "--porcelain") == ""


def test_a_second_run_waits_for_nobody_and_names_the_lock_holder(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_slow.py": SLOW_TEST},
        directives(env=("SLOW_TEST",)),  # the checks' environment is an allowlist
    )
    spec = script(propose=[FIX_ADD])
    first = subprocess.Popen(
        [sys.executable, "-m", "selfforge", "run", "--repo", str(repo), "--model", spec],
        env={**os.environ, "SLOW_TEST": "30"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: _lock_record(repo).get("pid") == first.pid)
        second = cli("run", "--repo", str(repo), "--model", spec)
        assert second.returncode == 1
        assert f"pid {first.pid}" in second.stderr
        status = json.loads(cli("status", "--json", "--repo", str(repo), check=True).stdout)
        assert status["running"] is True
    finally:
        first.kill()
        first.wait()


@pytest.mark.parametrize("ours", [False, True])
def test_recovery_stops_a_dead_runs_check_never_a_stranger_with_its_group_number(
    tmp_path: Path, ours: bool
) -> None:
    """A crashed run's lock names its check's process group; by the next run (after a
    reboot, or once pids wrapped) that number may lead someone else's group — an editor,
    a shell. Recovery kills the group only if its leader is the one that run started
    (``ours``: the record made while it ran), never the stranger's."""
    from selfforge.repo.workspace import Workspace, started
    from selfforge.run.recovery import recover_leftovers

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    group = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        ws = Workspace(repo)
        ws.prepare()
        when = started(group.pid) if ours else "another-boot:12345"
        record = {"pid": 999_999_999, "command": "selfforge run", "child_pgid": group.pid}
        ws.lock_path.write_text(json.dumps({**record, "child_started": when}))
        with ws.locked("selfforge run"):
            found = recover_leftovers(ws)
        assert (group.pid in found.killed_groups) is ours
        if ours:  # SIGKILL is delivered, not yet acted on: on a loaded machine it takes a while
            wait_for(lambda: not group_running(group.pid))
        else:
            assert group_running(group.pid)
    finally:
        group.kill()
        group.wait()
