"""Protected paths: gitignore-style globs (pathspec) a candidate may not touch.

Checked twice: when edits are applied (``edits/safety.py`` asks here) and again by the
judge on the staged change itself, so a change that reaches a protected path some other
way (a rename, a file the edit engine did not see) is still refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

import pathspec


@lru_cache(maxsize=256)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec | None:
    pat = pattern.strip().replace("\\", "/")
    if not pat or pat.startswith("#"):
        return None
    # Case-folded: on macOS and Windows `.GitHub/x` is the same file as `.github/x`.
    return pathspec.GitIgnoreSpec.from_lines([pat.lower()])


def matching_glob(rel: str, patterns: Sequence[str]) -> str | None:
    """The first protected pattern matching the path or one of its parent folders."""
    path = rel.replace("\\", "/").lower()
    for pattern in patterns:
        spec = _spec(pattern)
        if spec is not None and spec.match_file(path):
            return pattern
    return None


def touched(paths: Iterable[str], patterns: Sequence[str]) -> list[tuple[str, str]]:
    """(path, pattern) for each path that a protected pattern covers."""
    found = []
    for path in paths:
        pattern = matching_glob(path, patterns)
        if pattern is not None:
            found.append((path, pattern))
    return found
