"""Where an edit may write: inside the repository, outside `.git/`, not protected.

A path is normalised as written (`./`, backslashes, `..`) and then resolved on disk,
so a symlink inside the repository that leads out is caught too. Protected paths use
gitignore-style globs relative to the root.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from selfforge.repo.protected import matching_glob


@dataclass(frozen=True)
class Target:
    rel: str  # repo-relative POSIX path of the real file (symlinks inside the repo resolved)
    path: Path  # absolute path to read and write


class Refused(Exception):
    """The path must not be written; the message is written for the model."""


def resolve_target(root: Path, raw: str, protected: Sequence[str] = ()) -> Target:
    rel = normalize(raw)
    real_root = root.resolve()
    real = (real_root / rel).resolve()
    if not real.is_relative_to(real_root):
        raise Refused(
            f"{raw} leads outside the repository (through a symlink); edit files "
            "inside the repository only."
        )
    real_rel = real.relative_to(real_root).as_posix()
    if real_rel == "." or _in_git_dir(real_rel):
        raise Refused(f"{raw} is inside .git/; selfforge never edits git's own files.")
    for candidate in {rel, real_rel}:
        pattern = matching_glob(candidate, protected)
        if pattern is not None:
            raise Refused(
                f"{raw} is protected (matches `{pattern}`) and must not be edited; "
                "reach the goal without changing it."
            )
    return Target(real_rel, real)


# The example path of the edit-format instructions, and names like it, copied by a model.
_PLACEHOLDER = re.compile(
    r"^(?:.*/)?(?:path/to/|(?:your_?file|file_?name|some_?file)\.\w+$)", re.IGNORECASE
)


def normalize(raw: str) -> str:
    """A clean repo-relative POSIX path, or Refused when the path cannot be one."""
    path = raw.strip().replace("\\", "/")
    if not path or "\x00" in path:
        raise Refused("the path is empty; name a file relative to the repository root.")
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:/", path):
        raise Refused(f"{raw} is an absolute path; use a path relative to the repository root.")
    norm = posixpath.normpath(path)
    if any(len(part.encode("utf-8")) > 255 for part in norm.split("/")):
        raise Refused(f"{raw[:60]}... has a name longer than 255 bytes; use a shorter name.")
    if norm == ".." or norm.startswith("../"):
        raise Refused(f"{raw} is outside the repository; edit files inside it only.")
    if norm == "." or path.endswith("/"):
        raise Refused(f"{raw} names a directory, not a file.")
    if _in_git_dir(norm):
        raise Refused(f"{raw} is inside .git/; selfforge never edits git's own files.")
    if _PLACEHOLDER.match(norm) or "<" in norm or ">" in norm:
        raise Refused(
            f"{raw} is a placeholder, not a file of this repository; name the real file "
            "(its path as shown in the prompt)."
        )
    if norm.split("/")[0].lower() == ".selfforge":
        raise Refused(f"{raw} is inside .selfforge/, selfforge's own state; edit project files.")
    return norm


def _in_git_dir(rel: str) -> bool:
    # A worktree's `.git` is a file; case-folded because some filesystems ignore case.
    return any(part.lower() == ".git" for part in rel.split("/"))
