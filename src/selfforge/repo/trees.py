"""Where selfforge's copies of a repository's code live: outside the user's checkout.

The worktrees (the kept ``baseline``, ``attempt`` and ``check``, candidates', undo's),
the judge's throwaway git dirs and ``[checks] setup``'s checkouts go in a private folder
per user, ``${SELFFORGE_TREES:-/var/tmp/selfforge-<uid>}``, one folder per repository
in it. Inside the checkout, the user's own test runners, type checkers and IDEs walked
them (``node --test`` and Jest ran the kept baseline's old tests; a pytest that recurses
into dot-folders collected them twice); under the git dir, Node 20 still walked them and
Jest ran none of a check's tests. Every check is shown its own tree and nothing else of
this folder (``sandbox.hidden_places``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from selfforge.errors import SelfforgeError
from selfforge.repo import git

TREES_ENV = "SELFFORGE_TREES"
NAME_MAX = 24  # of the checkout's folder name: the results channel's socket path is short


def root_path() -> Path:
    """The per-user folder, as a path (nothing made or checked): its last part is never
    resolved, so a link planted there is seen for what it is (``private_root``)."""
    chosen = os.environ.get(TREES_ENV) or f"/var/tmp/selfforge-{os.getuid()}"
    path = Path(os.path.abspath(os.path.expanduser(chosen)))
    return path.parent.resolve() / path.name


def private_root() -> Path:
    """The per-user folder, made (mode 0700) if missing; refused unless it is a real
    folder of the user's that no one else may write: a folder in /var/tmp that someone
    else made first would hand them every check's tree."""
    root = root_path()
    root.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    info = os.lstat(root)
    why = None
    if stat.S_ISLNK(info.st_mode):
        why = "a symbolic link"
    elif not stat.S_ISDIR(info.st_mode):
        why = "not a folder"
    elif info.st_uid != os.getuid():
        why = f"owned by uid {info.st_uid}, not by you"
    elif info.st_mode & 0o022:
        why = "writable by others"
    if why:
        raise SelfforgeError(
            f"{root}, where selfforge keeps its copies of your code, is {why}; remove it, "
            f"or set {TREES_ENV} to a folder only you can write"
        )
    return root


def for_repo(root: Path, common_dir: Path) -> Path:
    """The folder of one repository's trees (``worktrees/``, ``tmp/``, ``setup/``): named
    for its checkout's folder, told apart by its git dir (a copied repository, whose
    worktrees are not its own, gets a folder of its own)."""
    digest = hashlib.sha256(os.path.realpath(common_dir).encode()).hexdigest()[:12]
    name = re.sub(r"[^\w.-]", "_", root.name)[:NAME_MAX].lstrip(".") or "repo"
    return private_root() / f"{name}-{digest}"


def is_repo_folder(path: Path) -> bool:
    """``path`` is one repository's folder of trees (what ``for_repo`` names)."""
    return path.parent == root_path()


OLD_PLACES = ("worktrees", "tmp", "setup")  # where they were, under the checkout's .selfforge/


def retire_old_place(root: Path, state: Path, ours: Callable[[Path], bool]) -> list[Path]:
    """Remove the copies of the code an older selfforge kept in the checkout's
    ``.selfforge/``: each worktree of this repository through git (its admin folder goes
    too), one that is not (a copied repository's) only as files; what went."""
    gone = [p for p in (state / name for name in OLD_PLACES) if p.is_dir()]
    for folder in gone:
        for path in sorted(folder.iterdir()) if folder.name == "worktrees" else []:
            if ours(path):
                git.git("worktree", "remove", "-f", "-f", str(path), cwd=root, check=False)
        shutil.rmtree(folder, ignore_errors=True)
    if gone:
        git.git("worktree", "prune", cwd=root, check=False)
    return gone
