"""Which files of a repository the index looks at.

Tracked files plus untracked-but-not-ignored ones, as git lists them, so the index sees
what the user sees and nothing that ``.gitignore`` hides. ``.selfforge/`` is selfforge's
own state and never indexed; binaries and huge files are skipped because they cost
parse time and tokens without telling a model anything.
"""

from __future__ import annotations

from pathlib import Path

from selfforge.errors import GitError, UsageError
from selfforge.repo import git
from selfforge.repo.treefiles import NotReadable, read_bytes

MAX_FILE_BYTES = 1_000_000
_SKIP_PREFIXES = (".selfforge/", ".git/")


def git_root(repo: Path) -> Path:
    """The top of the git work tree containing ``repo``, or UsageError if there is none."""
    return git.repo_root(repo)


def list_files(repo_root: Path) -> list[str]:
    """Repo-relative POSIX paths of tracked and untracked-not-ignored files, sorted."""
    try:
        out = git.git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=repo_root)
    except GitError as exc:
        raise UsageError(f"{repo_root} is not a git repository: {exc.message}") from None
    paths = {p for p in out.split("\0") if p}
    return sorted(p for p in paths if not p.startswith(_SKIP_PREFIXES))


def read_source(path: Path) -> bytes | None:
    """The file's bytes, or None when it is missing, huge, binary or not a regular file
    (a symlink, even one inside the tree: its target is indexed under its own name)."""
    try:
        if path.is_symlink():
            return None
        data = read_bytes(path.parent, path.name, limit=MAX_FILE_BYTES + 1)
    except (OSError, NotReadable):
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    # A NUL byte in the first block is git's own test for binary content.
    if b"\0" in data[:8000]:
        return None
    return data
