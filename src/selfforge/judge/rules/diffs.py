"""What the integrity gates of every language share (integrity.py for Python,
integrity_lang.py for JS/TS, Go and Rust): a diff split per file, a file as the base
had it, and the refusal that names the first problems and why they matter."""

from __future__ import annotations

from pathlib import Path

from selfforge.errors import GitError
from selfforge.judge.verdict import PASS, Verdict
from selfforge.repo import git


def refusal(problems: list[str], why: str) -> Verdict:
    """PASS, or the rejection that names the first three problems and why they matter."""
    if not problems:
        return PASS
    reason = "integrity: the change " + "; ".join(problems[:3])
    return Verdict(False, reason, f"{reason}; {why}.", problems)


def split_diff(diff: str) -> dict[str, str]:
    """A git diff split per file (keyed by the new path)."""
    parts: dict[str, str] = {}
    current, lines = None, []
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            if current is not None:
                parts[current] = "\n".join(lines)
            current = line.rsplit(" b/", 1)[-1]
            lines = []
        lines.append(line)
    if current is not None:
        parts[current] = "\n".join(lines)
    return parts


def show_at(worktree: Path, base: str, path: str) -> str | None:
    """The file at ``base``, or None when it did not exist there (one git call)."""
    try:
        return git.git("show", f"{base}:{path}", cwd=worktree)
    except GitError:
        return None
