"""What drawing a negative needs in any language (negatives.py for Python,
negatives_lang.py for Go, Rust and JavaScript): the drawn record, ``NotDrawn`` with the
reason an instance has none of a kind, and the job clone's edits (write, apply, diff,
reset)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from selfforge.repo.git import call as git_call
from selfforge.repo.git import git


class NotDrawn(Exception):
    """This instance has no negative of this kind; the message says why."""


@dataclass(frozen=True)
class Negative:
    kind: str
    patch: str  # a git diff against the base: what the scripted model proposes
    note: str  # what it changes, e.g. "skips tests/test_shop.py::test_tax"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _write(clone: Path, path: str, text: str) -> None:
    target = clone / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if git_call("check-ignore", "-q", "--", path, cwd=clone).returncode == 0:
        # `*.conf*` in .gitignore takes vitest.config.ts: a change cannot add the file (a
        # run stages only what git tracks), and left in the clone it would steer the
        # baseline's own run.
        raise NotDrawn(f"{path} is ignored by the project's .gitignore: no change can add it")
    target.write_text(text, encoding="utf-8")


def _apply(clone: Path, patch: str) -> None:
    if patch.strip():
        git("apply", "--whitespace=nowarn", "-", cwd=clone, input_text=patch)


def _diff(clone: Path) -> str:
    git("add", "-A", cwd=clone)
    return git("diff", "--cached", "-U5", "HEAD", cwd=clone)


def _reset(clone: Path) -> None:
    git("reset", "-q", "--hard", "HEAD", cwd=clone)
    git("clean", "-fdq", cwd=clone)
