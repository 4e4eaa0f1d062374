"""The exploring proposer's ground: the sandbox its commands run in, whose git knows
only the past of the attempt's base, and the change it left in the worktree.

The checks' git dir (``judge/sandbox/check_git.py``) shares the repository's whole object store:
a command that knew the sha of a later commit (a bench instance's gold) could read it
with ``git show``. The proposer's shares a store of its own instead, fetched from the
repository by the base's sha alone (``git fetch --no-tags``): it holds exactly the
objects reachable from the base, and no ref, reflog or stash at all.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import shutil
import tempfile
from pathlib import Path

from selfforge.edits import ApplyResult
from selfforge.judge.sandbox.check_git import scratch_dir
from selfforge.judge.sandbox.command import CheckSpace
from selfforge.repo import git

# What the agent's own commands leave behind, never part of its change (aider's repo-map
# cache too: an outside agent's, propose/agents.py).
_LITTER = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".selfforge",
           ".aider.tags.cache.v4"}  # fmt: skip


def proposer_space(space: CheckSpace, tree: Path, base: str) -> CheckSpace:
    """The check space with git's history cut at ``base`` and no network, whatever
    [sandbox] network says for the checks: the repository's own git dir joins the
    hidden places, and the checks' git template is built on the past-only store."""
    real = space.git_common_dir
    if real is None:
        return dataclasses.replace(space, network=False)
    past = past_only(real.resolve(), base, scratch_dir(tree))
    return dataclasses.replace(
        space, git_common_dir=past, hidden=(*space.hidden, real), network=False
    )


@functools.lru_cache(maxsize=8)
def past_only(common: Path, base: str, scratch: Path | None) -> Path:
    """A bare repository holding only ``base`` and its ancestry: one per base and run
    (the attempts on one base share it), removed when the process ends; a killed run's
    is removed with the rest of the trees folder's ``tmp/``."""
    root = Path(tempfile.mkdtemp(prefix="selfforge-past-", dir=scratch))
    atexit.register(shutil.rmtree, root, True)
    git.git("init", "-q", "--bare", str(root), cwd=common)
    # file:// makes git pack what the base reaches instead of linking the whole store.
    git.git("fetch", "-q", "--no-tags", f"file://{common}", base, cwd=root)
    (root / "FETCH_HEAD").unlink(missing_ok=True)
    return root


def changed_paths(tree: Path, base: str) -> list[str]:
    """What the agent changed in ``tree`` since ``base``: tracked files modified or
    deleted and new files; never litter its commands left, a nested repository, or a
    symbolic link leading out of the tree. The index is set back to the base first, so
    a path the agent put back as it was is no change."""
    git.git("reset", "-q", base, cwd=tree)
    out = git.git(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", cwd=tree
    )
    paths = [entry[3:] for entry in out.split("\0") if len(entry) > 3]
    return [p for p in paths if _kept(tree, p)]


def change(tree: Path, base: str) -> ApplyResult:
    """What ``tree`` holds changed since ``base`` (``changed_paths``), as the edits an
    attempt commits: a proposer that works in the worktree returns it as its proposal."""
    paths = changed_paths(tree, base)
    return ApplyResult(True, paths, [], len(paths))


def reset_index(tree: Path, base: str) -> None:
    """The index as the base's tree, the files as they are: what an earlier round staged
    for its candidate holds objects the past-only store lacks, and git in the sandbox
    would fail to read them."""
    git.git("reset", "-q", base, cwd=tree)


def _kept(tree: Path, path: str) -> bool:
    parts = path.rstrip("/").split("/")
    if path.endswith("/") or any(p in _LITTER for p in parts) or path.endswith(".pyc"):
        return False
    full = tree / path
    if full.is_symlink():
        target = Path(os.path.realpath(full))
        return target == tree.resolve() or tree.resolve() in target.parents
    return True
