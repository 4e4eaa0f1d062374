"""Lint findings: parsed from the lint command's output, compared by file and message."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_CONCISE = re.compile(r"^(?P<path>[^\s:][^:\n]*\.\w+):(?P<line>\d+):(?:\d+:)?\s*(?P<msg>.+)$")
_ARROW = re.compile(r"^\s*-->\s*(?P<path>[^:\n]+):(?P<line>\d+)(?::\d+)?\s*$")
_RULE_LINE = re.compile(r"^(?P<msg>[A-Z]+\d+\b.*)$")


@dataclass(frozen=True)
class LintFinding:
    path: str
    line: int
    message: str

    @property
    def key(self) -> tuple[str, str]:
        """Identity that survives line shifts: file and message, not the line number."""
        return (self.path, self.message)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def parse_lint(output: str, exit_code: int | None) -> list[LintFinding]:
    """Findings in ``path:line[:col]: message`` form (and ruff's ``--> path:line`` form)."""
    findings: list[LintFinding] = []
    last_rule = ""
    for raw in output.splitlines():
        line = raw.rstrip()
        if m := _CONCISE.match(line):
            findings.append(LintFinding(m["path"].removeprefix("./"), int(m["line"]), m["msg"]))
        elif m := _ARROW.match(line):
            msg = last_rule or "lint finding"
            findings.append(LintFinding(m["path"].removeprefix("./"), int(m["line"]), msg))
        elif m := _RULE_LINE.match(line.strip()):
            last_rule = m["msg"]
    if not findings and exit_code not in (0, None):
        findings.append(LintFinding("", 0, f"lint command failed with exit code {exit_code}"))
    return findings


def new_findings(before: list[LintFinding], after: list[LintFinding]) -> list[LintFinding]:
    """Findings in ``after`` beyond those already in ``before`` (by file and message)."""
    budget = Counter(f.key for f in before)
    fresh = []
    for finding in after:
        if budget[finding.key] > 0:
            budget[finding.key] -= 1
        else:
            fresh.append(finding)
    return fresh
