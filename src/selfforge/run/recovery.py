"""Crash recovery: what a run that died left behind, cleaned up by the next locked command
(its check's process group, killed only if its leader is the process that run started;
worktrees, temporary branches, control groups; runs and attempts the journal still marks
open). Every locked command starts with ``recover``; your branch and files are never
touched."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.journal.store import Journal
from selfforge.judge.outcome import Outcome
from selfforge.judge.sandbox.limits import remove_leftover_groups
from selfforge.repo import git
from selfforge.repo.workspace import TMP_BRANCH_PREFIX, Workspace, started


@dataclass
class Recovery:
    """What the start of a run cleaned up after an earlier, interrupted one."""

    worktrees: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    killed_groups: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    attempts: int = 0
    control_groups: int = 0  # a killed run's checks' control groups, removed

    def __bool__(self) -> bool:
        return bool(
            self.worktrees
            or self.branches
            or self.killed_groups
            or self.runs
            or self.attempts
            or self.control_groups
        )

    def describe(self) -> str:
        parts = []
        if self.runs:
            parts.append(f"run(s) {', '.join(map(str, self.runs))} had been interrupted")
        if self.attempts:
            parts.append(f"{self.attempts} open attempt(s) closed as errors")
        if self.worktrees:
            parts.append(f"removed {len(self.worktrees)} stale worktree(s)")
        if self.branches:
            parts.append(f"deleted {len(self.branches)} temporary branch(es)")
        if self.killed_groups:
            parts.append(f"stopped {len(self.killed_groups)} leftover check process group(s)")
        if self.control_groups:
            parts.append(f"removed {self.control_groups} control group(s) of killed checks")
        return "recovered: " + "; ".join(parts) + "; your branch and files were not touched"


def _still_ours(pgid: int, recorded: object) -> bool:
    """Whether process group ``pgid`` can still be the dead run's check. The kernel gives
    no new process a number some group still uses, so: no process of that number, and
    any group of it is ours (its leader died, its members did not); a process of that
    number that started at another time is a stranger's that got the number later (after
    a reboot, or once pids wrapped), and its group is never touched."""
    now = started(pgid)
    return now is None or now == recorded


def recover(ws: Workspace, journal: Journal) -> str:
    """After taking the lock: clean up what a dead run left; say what, or "" if nothing.

    We hold the lock, so any run the journal still marks running died without closing.
    """
    found = recover_leftovers(ws)
    for run_id, _pid in journal.running_runs():
        died = "the run's process died"
        found.attempts += journal.end_run(run_id, "interrupted", died, left_open=Outcome.ERROR)
        found.runs.append(run_id)
    found.attempts += journal.close_orphan_attempts(left_open=Outcome.ERROR)
    return found.describe() if found else ""


def recover_leftovers(ws: Workspace) -> Recovery:
    """Clean up after a run that died: its check processes, worktrees, temp branches.

    Call while holding the lock: ``stale_record`` then holds what a dead holder left.
    """
    found = Recovery()
    record = ws.stale_record or {}
    pgid = record.get("child_pgid")
    if (
        isinstance(pgid, int)
        and pgid > 1
        and pgid != os.getpgid(0)
        and _still_ours(pgid, record.get("child_started"))
    ):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            found.killed_groups.append(pgid)
    shutil.rmtree(ws.scratch, ignore_errors=True)  # the dead run's git templates
    # The kept slots are reset when next used, like after any run; the rest go.
    for leftover in ws.unkept():
        shutil.rmtree(leftover, ignore_errors=True)
        found.worktrees.append(str(leftover))
    if found.worktrees or _registered_missing(ws):
        git.git("worktree", "prune", cwd=ws.root, check=False)  # forgets the removed
    branches = _temp_branches(ws)  # made by selfforge before worktrees were detached
    if branches:
        git.git("branch", "-D", *branches, cwd=ws.root, check=False)
        found.branches.extend(branches)
    found.control_groups = len(remove_leftover_groups())  # any repository's dead run's
    return found


def _registered_missing(ws: Workspace) -> bool:
    """Git still lists a worktree under our folder that is gone (read from its admin
    files): a prune forgets it."""
    ours = str(ws.worktrees.resolve()) + os.sep
    for gitdir in (ws.common_dir / "worktrees").glob("*/gitdir"):
        with contextlib.suppress(OSError):
            dot_git = Path(gitdir.read_text().strip())
            if str(dot_git.resolve()).startswith(ours) and not dot_git.exists():
                return True
    return False


def _temp_branches(ws: Workspace) -> list[str]:
    common = ws.common_dir
    packed = common / "packed-refs"
    prefix = f"refs/heads/{TMP_BRANCH_PREFIX}"
    maybe = (
        (common / prefix).is_dir()
        or (common / "reftable").exists()
        or (packed.is_file() and prefix.encode() in packed.read_bytes())
    )
    if not maybe:  # the usual case, seen without a git call
        return []
    out = git.git(
        "for-each-ref",
        "--format=%(refname:short)",
        f"refs/heads/{TMP_BRANCH_PREFIX}",
        cwd=ws.root,
    )
    return [b for b in out.split() if b]
