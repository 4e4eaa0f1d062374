"""``selfforge measure [REV | A..B]``: the declared measures at one revision, or compared
between two, each revision checked out in a worktree of its own (never the user's
checkout), the worktrees removed at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.config import Directives, Measure, measure_files
from selfforge.errors import UsageError
from selfforge.journal.store import Journal
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.measure.history import keep
from selfforge.measure.sample import Comparison, Side, Value, compare, policy_ahead, values_at
from selfforge.repo import git
from selfforge.repo.workspace import Workspace

SLOTS = ("measure-base", "measure-candidate")


@dataclass
class Report:
    """What ``selfforge measure`` answers: values at one revision, or comparisons."""

    base: str
    candidate: str | None = None
    values: list[Value] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    seconds: float = 0.0  # the whole command's measuring, worktrees included

    def to_json(self) -> dict[str, object]:
        if self.candidate is None:
            return {"revision": self.base, "measures": [v.to_json() for v in self.values]}
        return {
            "base": self.base,
            "candidate": self.candidate,
            "measures": [c.to_json() for c in self.comparisons],
        }


def chosen(d: Directives, names: list[str]) -> list[Measure]:
    """The measures to run: those named (each must be declared), else all declared."""
    declared = {m.name: m for m in d.measures}
    if not declared:
        raise UsageError(
            "no measure is declared; add a [[measures]] table to selfforge.toml "
            "(docs/directives.md, docs/guides/measured-goals.md)"
        )
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise UsageError(f"no measure named {unknown[0]!r}; declared: {', '.join(declared)}")
    return [declared[n] for n in names] if names else list(declared.values())


def commit_of(root: Path, rev: str) -> str:
    sha = git.git("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", cwd=root, check=False)
    if not sha.strip():
        raise UsageError(f"no commit named {rev!r} here; give a commit, a branch or A..B")
    return sha.strip()


def measure(ws: Workspace, d: Directives, space: CheckSpace, rev: str, names: list[str]) -> Report:
    """The measures at ``rev``, or compared between the two sides of ``A..B``."""
    measures = chosen(d, names)
    started = time.monotonic()
    policy_ahead(measures, space, ws.root)
    with ws.locked("selfforge measure"):
        try:
            if ".." in rev:
                left, _, right = rev.partition("..")
                a, b = commit_of(ws.root, left or "HEAD"), commit_of(ws.root, right or "HEAD")
                base, candidate = sides(ws, d, a, b)
                found = compare(measures, d, base, candidate, space, ws.root)
                report = Report(a, b, comparisons=found)
            else:
                sha = commit_of(ws.root, rev)
                side = Side(sha, ws.create_worktree(SLOTS[0], sha))
                report = Report(sha, values=values_at(measures, d, side, space, ws.root))
        finally:
            ws.remove_worktrees()
        with Journal(ws.state / "journal.db") as journal:  # every measurement is kept
            base = report.base if report.candidate else None
            keep(
                journal,
                "measure",
                base,
                report.candidate or report.base,
                report.comparisons,
                report.values,
            )
    report.seconds = time.monotonic() - started
    return report


def sides(ws: Workspace, d: Directives, base: str, candidate: str) -> tuple[Side, Side]:
    """Both revisions checked out to be measured; the candidate's tree holds the base's
    version of every file a measure runs (its script, data, configuration): the base's
    ruler measures the candidate's code, whatever the change did to the ruler."""
    a = Side(base, ws.create_worktree(SLOTS[0], base))
    b = Side(candidate, ws.create_worktree(SLOTS[1], candidate))
    for path in measure_files(d):
        if git.ok("cat-file", "-e", f"{base}:{path}", cwd=b.tree):
            git.git("checkout", "-q", base, "--", path, cwd=b.tree)
    return a, b
