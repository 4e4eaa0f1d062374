"""Leftovers are cleaned: a killed run's throwaway git dirs live in the repository's trees
folder (``tmp/``, not /tmp), and `selfforge clean` lists and removes them, stale worktrees
and kept branches."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfforge.judge.sandbox import limits

from conftest import (
    CALC,
    FIX_ADD,
    TEST_CALC,
    cli,
    directives,
    git,
    make_repo,
    trees_dir,
    wait_for,
)

SLOW_TEST = """
import os, time
from pathlib import Path

def test_slow_in_attempts():
    if Path.cwd().name.startswith("attempt") and os.environ.get("SLOW_TEST"):
        time.sleep(float(os.environ["SLOW_TEST"]))
"""


RUN = [sys.executable, "-m", "selfforge", "run"]


def _slow_run(tmp_path: Path, script, seconds: int) -> tuple[Path, subprocess.Popen[bytes]]:
    """A run whose attempt's tests sleep ``seconds``: a run that is busy when we look."""
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_slow.py": SLOW_TEST},
        directives(env=("SLOW_TEST",)),
    )
    proc = subprocess.Popen(
        [*RUN, "--repo", str(repo), "--model", script(propose=[FIX_ADD])],
        env={**os.environ, "SLOW_TEST": str(seconds)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return repo, proc


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sf-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _system_templates() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "selfforge-git-*")))


def test_a_killed_runs_leftovers_are_under_the_state_dir_and_clean_removes_them(
    short_tmp: Path, script, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A short path: the results channel's socket goes in the trees folder only where its
    # path fits in a socket address (108 bytes); pytest's own tmp_path may not.
    monkeypatch.setenv("SELFFORGE_TREES", str(short_tmp / "trees"))
    repo, proc = _slow_run(short_tmp, script, seconds=60)
    worktrees = trees_dir(repo) / "worktrees"
    scratch_dir = trees_dir(repo) / "tmp"
    # the attempt's tests are running: their results channel is open in the scratch dir
    wait_for(lambda: any(worktrees.glob("attempt*/test_slow.py")) and _checking(repo))
    wait_for(lambda: any(scratch_dir.glob("judge-*/sock")))
    # The check's control groups are named with the run's pid: found later, once it died.
    groups = _control_groups(proc.pid)
    assert groups or limits.enforcement() == "rlimit"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    scratch = sorted(scratch_dir.glob("selfforge-git-*"))
    assert scratch  # the killed run's templates stayed in the repository's state dir...
    channels = sorted(scratch_dir.glob("judge-*"))
    assert any((c / "sock").is_socket() for c in channels)  # ...and its results channel
    # ...and none in /tmp (other processes make theirs there: ours name our commits)
    ours = set(git(repo, "rev-list", "--all").split())
    for template in _system_templates():
        head = Path(template, "gitdir", "HEAD")
        assert not (head.exists() and head.read_text().strip() in ours), template

    listed = cli("clean", "--dry-run", "--repo", str(repo), check=True).stdout
    assert f"would remove scratch {scratch_dir}/selfforge-git-" in listed
    assert f"would remove worktree {worktrees}/attempt" in listed
    assert all(p.exists() for p in scratch)
    out = cli("clean", "--repo", str(repo), check=True).stdout
    assert "removed scratch" in out and "removed worktree" in out
    assert not any(p.exists() for p in scratch) and not list(worktrees.glob("*"))
    assert not any(c.exists() for c in channels)
    # The killed run's control groups are gone too (removed by this clean, or by another
    # run's recovery first: each removes every dead run's, whichever repository it ran on).
    assert not any(g.exists() for g in groups) and not _control_groups(proc.pid)
    again = cli("clean", "--repo", str(repo), check=True).stdout
    assert "worktree" not in again and "scratch" not in again


def _control_groups(pid: int) -> list[Path]:
    return [
        group
        for parent in set(limits._own_cgroups().values())
        for group in parent.glob(f"{limits.GROUP_PREFIX}{pid}-*")
    ]


def _checking(repo: Path) -> bool:
    lock = (repo / ".selfforge" / "run.lock").read_text() if (repo / ".selfforge").exists() else ""
    return "child_pgid" in lock


def test_clean_removes_merged_kept_branches_and_keeps_unmerged_ones(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "branch", "selfforge/merged-change", base)
    (repo / "new.py").write_text("x = 1\n")
    git(repo, "add", "new.py")
    git(repo, "commit", "-qm", "unmerged")
    unmerged = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "reset", "-q", "--hard", base)
    git(repo, "branch", "selfforge/unmerged-change", unmerged)

    out = cli("clean", "--repo", str(repo), check=True).stdout
    assert "removed branch selfforge/merged-change" in out and "git branch" in out
    assert "kept    branch selfforge/unmerged-change" in out and "--branches" in out
    branches = git(repo, "branch", "--list", "selfforge/*")
    assert "merged-change" not in branches.replace("unmerged-change", "")
    assert "unmerged-change" in branches

    out = cli("clean", "--branches", "--repo", str(repo), check=True).stdout
    assert f"removed branch selfforge/unmerged-change ({unmerged[:10]}, not merged" in out
    assert git(repo, "branch", "--list", "selfforge/*") == ""
    git(repo, "branch", "selfforge/unmerged-change", unmerged[:10])  # as printed: restorable


def test_clean_refuses_while_a_run_holds_the_lock(tmp_path: Path, script) -> None:
    repo, proc = _slow_run(tmp_path, script, seconds=30)
    try:
        wait_for(lambda: any((trees_dir(repo) / "worktrees").glob("attempt*/test_slow.py")))
        refused = cli("clean", "--repo", str(repo))
        assert refused.returncode == 1 and "another selfforge run holds" in refused.stderr
        assert any((trees_dir(repo) / "worktrees").glob("attempt*"))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


@pytest.mark.skipif(limits.enforcement() == "rlimit", reason="needs control groups")
def test_only_a_dead_runs_empty_control_groups_are_removed(tmp_path: Path) -> None:
    """A group is removed only when the pid in its name is gone and nothing is in it:
    one with a process (a check of a run this process cannot see), or named without a
    pid (an older selfforge's, maybe a check about to join it), is left, and nothing is
    ever killed."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    parent = next(iter(sorted(set(limits._own_cgroups().values()))))
    empty = parent / f"{limits.GROUP_PREFIX}{dead.pid}-emptyleftover"
    busy = parent / f"{limits.GROUP_PREFIX}{dead.pid}-busyleftover"
    unnamed = parent / f"{limits.GROUP_PREFIX}0123456789ab"
    for group in (empty, busy, unnamed):
        group.mkdir()
    sleeper = subprocess.Popen(["/bin/sh", "-c", f'echo $$ > "{busy}/cgroup.procs"; exec sleep 30'])
    try:
        wait_for(lambda: bool((busy / "cgroup.procs").read_text().split()))
        listed = cli("clean", "--dry-run", "--repo", str(_repo(tmp_path)), check=True).stdout
        assert str(busy) not in listed and str(unnamed) not in listed
        limits.remove_leftover_groups()
        assert not empty.exists()  # removed (here, or by another run's recovery)
        assert busy.exists() and unnamed.exists()
        assert sleeper.poll() is None  # never killed
    finally:
        sleeper.kill()
        sleeper.wait()
        for group in (busy, unnamed, empty):
            wait_for(lambda g=group: not g.exists() or _rmdir(g))


def _rmdir(group: Path) -> bool:
    try:
        group.rmdir()
    except OSError:
        return False
    return True


def _repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
