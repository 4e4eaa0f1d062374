"""The git a check sees inside the sandbox: a throwaway git dir per check.

It shares the repository's objects (read-only) and tags, with none of its refs, hooks or
config, so git works in the tree and nothing done with it reaches the user's repository.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.repo import git, trees

GIT_INSIDE = "/tmp/.selfforge-git"
GIT_TEMPLATE_INSIDE = "/tmp/.selfforge-git-template"
OBJECTS_INSIDE = "/tmp/.selfforge-objects"


def binds(common: Path | None, tree: Path, head: str | None) -> list[sandbox.Bind]:
    """A git dir for the check that shares the repository's objects (read-only) and tags,
    with none of its refs, hooks or config: git works in the tree, and nothing done with
    it reaches the user's repository. A template per commit is made once; the sandbox
    copies it into its private /tmp before the command starts (see ``prelude``)."""
    dot_git = tree / ".git"
    if common is None or not dot_git.is_file() or head is None:
        return []
    index = _worktree_index(dot_git)
    stamp = index.stat().st_mtime_ns if index is not None and index.exists() else 0
    template = _git_template(common, head, index, stamp, scratch_dir(tree))
    return [
        sandbox.Bind(template, Path(GIT_TEMPLATE_INSIDE)),
        sandbox.Bind(common / "objects", Path(OBJECTS_INSIDE)),
        sandbox.Bind(template / "dot-git", dot_git.resolve()),
    ]


def _worktree_index(dot_git: Path) -> Path | None:
    text = dot_git.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else (dot_git.parent / gitdir).resolve()
    return gitdir / "index"


def scratch_dir(tree: Path) -> Path | None:
    """``tmp/`` in the trees folder of the repository whose worktree ``tree`` is (see
    ``selfforge.repo.trees``): what a killed run leaves there, the next run (or ``selfforge
    clean``) removes; None outside one."""
    folder = tree.parent.parent
    if tree.parent.name != "worktrees" or not trees.is_repo_folder(folder):
        return None
    scratch = folder / "tmp"
    scratch.mkdir(exist_ok=True)
    return scratch


@functools.lru_cache(maxsize=64)
def _git_template(
    common: Path, head: str, index: Path | None, stamp: int, scratch: Path | None = None
) -> Path:
    root = Path(tempfile.mkdtemp(prefix="selfforge-git-", dir=scratch))
    atexit.register(shutil.rmtree, root, True)
    gitdir = root / "gitdir"
    (gitdir / "objects" / "info").mkdir(parents=True)
    (gitdir / "refs" / "heads").mkdir(parents=True)
    (gitdir / "refs" / "tags").mkdir()
    (gitdir / "HEAD").write_text(head + "\n")
    (gitdir / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    (gitdir / "objects" / "info" / "alternates").write_text(OBJECTS_INSIDE + "\n")
    (gitdir / "packed-refs").write_text(_tags(common, *_tags_stamp(common)))
    if index is not None and index.is_file():
        (gitdir / "index").write_bytes(index.read_bytes())
    (root / "dot-git").write_text(f"gitdir: {GIT_INSIDE}\n")
    return root


def _tags_stamp(common: Path) -> tuple[int, int]:
    stamps = []
    for place in (common / "packed-refs", common / "refs" / "tags"):
        try:
            stamps.append(place.stat().st_mtime_ns)
        except OSError:
            stamps.append(0)
    return stamps[0], stamps[1]


@functools.lru_cache(maxsize=16)
def _tags(common: Path, packed_stamp: int, loose_stamp: int) -> str:
    """The repository's tags as packed-refs lines, read once until they change (every
    restore of a tree makes a new template: one git call less per check)."""
    return git.git(
        "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags", cwd=common, check=False
    )


def prelude(policy_binds: tuple[sandbox.Bind, ...]) -> str:
    """The shell that runs first inside the sandbox: a fresh, writable copy of the git
    template where the check has one, else nothing."""
    inside = (Path(GIT_INSIDE), Path(GIT_TEMPLATE_INSIDE))
    if any(b.dest in inside for b in policy_binds):
        return f"cp -R {GIT_TEMPLATE_INSIDE}/gitdir {GIT_INSIDE} 2>/dev/null; "
    return ""
