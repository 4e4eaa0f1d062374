"""What a task must achieve to land (its acceptance criterion).

A task aimed at failing tests — it names them, names what they test, or asks for the
tests to pass while some fail — lands only when at least one of those tests goes from
failing to passing, with nothing regressed. Any other task needs a non-empty change
that the reviewers approve as doing it.
"""

from __future__ import annotations

import re

from selfforge.judge.verdict import Criterion, Observed

_ASKS_FOR_TESTS = re.compile(
    r"\b(failing|fails?|failures?|broken|green|regressions?)\b"
    r"|\btests?\b[^.;]*\bpass(es|ing)?\b|\bpass(es|ing)?\b[^.;]*\btests?\b"
    r"|\bfix(es)?\b[^.;]*\btests?\b",
    re.I,
)
_NOISE = {
    "test",
    "tests",
    "the",
    "and",
    "for",
    "with",
    "fix",
    "make",
    "that",
    "this",
    "pass",
    "passes",
    "failing",
    "fails",
    "should",
    "when",
    "from",
    "into",
    "all",
    "py",
    "collection",
}


def for_task(task: str, baseline: Observed) -> Criterion:
    tests = baseline.tests
    failing = sorted(tests.failing - baseline.flaky) if tests is not None else []
    if not failing:
        return Criterion("change")
    named = [t for t in failing if _names(task, t)]
    if named:
        return Criterion("tests", named)
    if _ASKS_FOR_TESTS.search(task):
        return Criterion("tests", failing)
    return Criterion("change")


def _names(task: str, test: str) -> bool:
    """The task names this test (its id or function) or calls out what it tests: `add()`."""
    if test in task:
        return True
    words = set(re.findall(r"[a-z_][a-z0-9_]{2,}", task.lower()))
    leaf = re.split(r"::|\.", test)[-1].split("[")[0].lower()
    if leaf in words:
        return True
    called = {
        m.lower()
        for m in re.findall(r"([A-Za-z_]\w*)\s*\(\)|`([A-Za-z_]\w*)`", task)
        for m in m
        if m
    }
    parts = {p for p in leaf.split("_") if len(p) >= 3 and p not in _NOISE}
    return bool(parts & called)
