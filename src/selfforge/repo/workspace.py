"""Where attempts happen: the state directory, the run lock, isolated worktrees, landing,
and recovery after a crash. The user's branch, index and files are only ever changed by
``land`` — a fast-forward of work that passed every gate, onto a clean, unmoved HEAD.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from selfforge.errors import GitError, LockedError, UsageError
from selfforge.repo import git, trees
from selfforge.repo.treefiles import remove_special_files

STATE_DIR = ".selfforge"
TMP_BRANCH_PREFIX = "selfforge/tmp/"
KEEP_BRANCH_PREFIX = "selfforge/"
# The worktrees a run keeps for the next one: checking out a new commit there rewrites
# only the files that differ, and the index sees the others unchanged (a fresh checkout
# writes every file: most of a small run's time on a repository of a thousand files).
# `selfforge check` (the gate for other agents) judges in its own. Every other slot
# (parallel candidates, undo) goes when its command ends.
# (a Go check's lint reads a checkout of its own beside its worktree: judge/lint_beside_tests.py)
KEPT_SLOTS = frozenset(
    {
        "baseline",
        "attempt",
        "check",
        "attempt-lint",
        "check-lint",
        "measure-base",
        "measure-candidate",
    }
)


def started(pid: int) -> str | None:
    """When process ``pid`` started (the boot's id and clock ticks since boot), or None
    when there is no such process (or no /proc to ask)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None


@dataclass
class LandResult:
    landed: bool  # fast-forwarded onto the user's branch
    branch: str | None  # kept branch, when not landed (or always, in branch mode)
    message: str


class Workspace:
    """One target repository and its ``.selfforge/`` state."""

    def __init__(self, repo: Path) -> None:
        self.root = git.repo_root(repo)
        self.state = self.root / STATE_DIR
        self.lock_path = self.state / "run.lock"
        self._lock_fd: int | None = None
        self.stale_record: dict[str, object] | None = None
        self._record: dict[str, object] = {}  # what this process wrote into the lock file
        # slot -> commit of a worktree this process checked out fresh and no one has used
        # yet (the next attempt's, made while the baseline ran): no reset needed.
        self._untouched: dict[str, str] = {}
        # One git worktree operation at a time: `git worktree add` reads every other
        # worktree's admin folder and fails on one being made (the baseline's and the
        # next attempt's are made from two threads).
        self._worktree_lock = threading.Lock()

    @functools.cached_property
    def common_dir(self) -> Path:
        """The repository's git directory (shared by its worktrees)."""
        return git.common_dir(self.root)

    @functools.cached_property
    def trees(self) -> Path:
        """Where selfforge's copies of the code live: outside the checkout (trees.py)."""
        return trees.for_repo(self.root, self.common_dir)

    @property
    def worktrees(self) -> Path:
        return self.trees / "worktrees"

    @property
    def scratch(self) -> Path:
        """The judge's throwaway git dirs (check_git) and results channels."""
        return self.trees / "tmp"

    def prepare(self) -> None:
        """Create the state directory and keep it out of git, via .git/info/exclude."""
        self.state.mkdir(exist_ok=True)
        exclude = self.common_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text() if exclude.exists() else ""
        if f"/{STATE_DIR}/" not in text.splitlines():
            sep = "" if not text or text.endswith("\n") else "\n"
            exclude.write_text(f"{text}{sep}/{STATE_DIR}/\n")

    # --- the run lock ------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, command: str) -> Iterator[None]:
        """Hold the repository's run lock. The OS releases it if the process dies."""
        self.prepare()
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self.lock_holder()
            os.close(fd)
            who = f"pid {holder.get('pid')} ({holder.get('command')})" if holder else "a process"
            raise LockedError(
                f"another selfforge run holds {self.lock_path} ({who}); wait for it to "
                "finish or stop it, then retry"
            ) from None
        self._lock_fd = fd
        # A non-empty record means the last holder died without releasing it cleanly.
        self.stale_record = self.lock_holder()
        self._record = {"pid": os.getpid(), "command": command, "since": time.time()}
        self._write_lock()
        try:
            # An older selfforge's copies of the code in .selfforge/: quietly, once.
            trees.retire_old_place(self.root, self.state, self._is_our_worktree)
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._lock_fd = None

    @property
    def lock_fd(self) -> int | None:
        """The run lock's descriptor while held (a forked worker closes its copy)."""
        return self._lock_fd

    def _write_lock(self) -> None:
        assert self._lock_fd is not None
        data = json.dumps(self._record).encode()
        os.ftruncate(self._lock_fd, 0)
        os.pwrite(self._lock_fd, data, 0)

    def note_child_group(self, pgid: int | None) -> None:
        """Remember a running check's process group so recovery can stop it if we die,
        with when its leader started: the number may be a stranger's by then."""
        if self._lock_fd is None:
            return
        self._record["child_pgid"] = pgid
        self._record["child_started"] = started(pgid) if pgid else None
        self._write_lock()

    def lock_holder(self) -> dict[str, object] | None:
        """The lock file's record, if a process currently holds the lock."""
        try:
            text = self.lock_path.read_text()
        except FileNotFoundError:
            return None
        try:
            return json.loads(text) if text.strip() else None
        except json.JSONDecodeError:
            return None

    def needs_recovery(self) -> bool:
        """An earlier run died here: its lock record or worktrees are still around."""
        if self.lock_is_held():
            return False
        return bool(self.lock_holder()) or bool(self.unkept())

    def lock_is_held(self) -> bool:
        if not self.lock_path.exists():
            return False
        fd = os.open(self.lock_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    # --- worktrees ---------------------------------------------------------------------

    def create_worktree(self, slot: str, commit: str) -> Path:
        """The worktree ``slot``, detached at ``commit`` (no branch to make or delete).

        A slot's worktree is reused within a run: checking out the new commit and
        cleaning every untracked and ignored file leaves exactly what a fresh checkout
        would, but touches only the files that differ (a fresh one rewrites them all).
        One that ``prepare_worktree`` made and nothing has used since is handed over as
        it is, once.
        """
        path = self.worktrees / slot
        if self._untouched.pop(slot, None) == commit and self._is_our_worktree(path):
            return path
        with self._worktree_lock:
            return self._checkout(path, commit)

    def _checkout(self, path: Path, commit: str) -> Path:
        self.worktrees.mkdir(parents=True, exist_ok=True)
        if self._is_our_worktree(path):
            try:
                git.git("checkout", "-q", "-f", "--detach", commit, cwd=path)
                git.git("clean", "-q", "-ffdx", cwd=path)
                remove_special_files(path)  # a FIFO the last check left (git ignores them)
                return path
            except GitError:
                pass  # a killed git's lock, a file a check made unremovable: made afresh
        shutil.rmtree(path, ignore_errors=True)
        # -f: a path git still lists but whose folder is gone (removed by hand) is taken.
        git.git("worktree", "add", "-q", "-f", "--detach", str(path), commit, cwd=self.root)
        return path

    def prepare_worktree(self, slot: str, commit: str) -> Path:
        """``create_worktree`` ahead of its use, for work that only reads the tree (the
        next attempt's context, while the baseline runs): the next ``create_worktree``
        of that slot and commit gets it without checking it out and cleaning it again."""
        self._untouched.pop(slot, None)
        path = self.create_worktree(slot, commit)
        self._untouched[slot] = commit
        return path

    def has_worktree(self, slot: str) -> bool:
        """The worktree ``slot`` is there to be reset (kept by an earlier run, or made)."""
        return self._is_our_worktree(self.worktrees / slot)

    def _is_our_worktree(self, path: Path) -> bool:
        """``path`` is a worktree of this repository that git still knows: its admin
        folder is there, under this repository's git dir, and names ``path`` back (a
        repository copied or moved with its old trees holds worktrees of the old one's).
        Read from the files rather than asked of git: one subprocess less per attempt."""
        dot_git = path / ".git"
        try:
            text = dot_git.read_text(errors="replace").strip() if dot_git.is_file() else ""
            if not text.startswith("gitdir:"):
                return False
            # Relative paths (worktree.useRelativePaths) are from the file that holds them.
            admin = (path / text.removeprefix("gitdir:").strip()).resolve()
            back = (admin / (admin / "gitdir").read_text().strip()).resolve()
        except OSError:
            return False
        mine = admin.parent == (self.common_dir / "worktrees").resolve()
        return mine and back == dot_git.resolve() and (admin / "HEAD").is_file()

    def remove_worktrees(self) -> None:
        """End of a command: remove its worktrees but the kept slots (``KEPT_SLOTS``), which
        the next run resets; one prune forgets what went. ``selfforge clean`` removes all."""
        with self._worktree_lock:
            gone = self.unkept()
            for path in gone:
                shutil.rmtree(path, ignore_errors=True)
            self._untouched.clear()
            if gone:
                git.git("worktree", "prune", cwd=self.root, check=False)

    def unkept(self) -> list[Path]:
        """Our worktree folders other than the kept slots (and a kept one git no longer
        knows, which is made afresh anyway)."""
        if not self.worktrees.exists():
            return []
        return [
            path
            for path in sorted(self.worktrees.iterdir())
            if path.name not in KEPT_SLOTS or not self._is_our_worktree(path)
        ]

    # --- landing -----------------------------------------------------------------------

    def land(self, *, commit: str, base_commit: str, mode: str, name: str) -> LandResult:
        """Fast-forward the user's branch to ``commit`` if it is safe; else keep a branch."""
        state = git.head_state(self.root)
        # Untracked files stay: a fast-forward never touches one the commit does not add
        # (those it adds are the clash below). A `__pycache__` the user's own test run
        # left in a repository that ignores none used to keep every change on a branch.
        branch, dirty = state.branch, [p for p in state.dirty if p not in state.untracked]
        reason = None
        if mode == "branch":
            reason = "land mode is 'branch'"
        elif branch is None:
            reason = "HEAD is detached"
        elif state.commit != base_commit:
            reason = f"{branch} moved since the attempt started"
        elif dirty:
            shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
            reason = f"your working tree has uncommitted changes ({shown})"
        elif clash := self._would_overwrite(base_commit, commit):
            reason = f"it adds {clash}, which exists (untracked or ignored) in your checkout"
        if reason is None:
            if git.ok("merge", "--ff-only", "-q", commit, cwd=self.root):
                return LandResult(True, None, f"landed {commit[:10]} on {branch}")
            reason = "the fast-forward was refused"
        kept = self.keep_branch(commit, name)
        onto = branch or "your branch"
        return LandResult(
            False,
            kept,
            f"kept on branch {kept} ({reason}); merge it into {onto} with: git merge {kept}",
        )

    def _would_overwrite(self, base: str, commit: str) -> str | None:
        """A path the commit adds that already exists in the user's checkout: git would
        overwrite an ignored file there without asking."""
        added = git.git(
            "diff",
            "--name-only",
            "--no-renames",
            "--diff-filter=A",
            "-z",
            base,
            commit,
            cwd=self.root,
        ).split("\0")
        return next((p for p in added if p and os.path.lexists(self.root / p)), None)

    def keep_branch(self, commit: str, name: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "change"
        branch = f"{KEEP_BRANCH_PREFIX}{slug}"
        n = 1
        while git.ok("rev-parse", "--verify", "-q", f"refs/heads/{branch}", cwd=self.root):
            n += 1
            branch = f"{KEEP_BRANCH_PREFIX}{slug}-{n}"
        git.git("branch", branch, commit, cwd=self.root)
        return branch


def require_commit(root: Path) -> str:
    head = git.head_commit(root)
    if head is None:
        raise UsageError(f"{root} has no commits yet; commit your code first, then retry")
    return head


__all__ = ["GitError", "LandResult", "Workspace", "require_commit"]
