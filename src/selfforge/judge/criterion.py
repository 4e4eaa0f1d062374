"""What a task must achieve to land (its acceptance criterion).

A task that names failing tests by their ids (``tests/test_a.py::test_x``, or the file
or class that holds them) lands only when every one of them passes, with nothing
regressed: a change that fixes some and leaves others failing is not the task done. A
task aimed at failing tests more loosely — it names what they test (``add()``) or asks
for the failing tests to pass — lands when at least one of them goes from failing to
passing: partial progress on a broad request is progress. Any other task needs a
non-empty change that the reviewers approve as doing it.
"""

from __future__ import annotations

import re

from selfforge.judge.results import WHOLE_SUITE, collect_id
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


# A test id as written in a task: path, then ::names, a parametrized one with its [id]
# (which may hold spaces and punctuation, up to its closing bracket).
_TEST_ID = re.compile(r"(?<![\w./-])([\w./-]+\.py)((?:::[\w.-]+(?:\[[^\]\n]*\])?)+)")


def for_task(task: str, baseline: Observed) -> Criterion:
    tests = baseline.tests
    failing = sorted(tests.failing - baseline.flaky) if tests is not None else []
    if not failing:
        return Criterion("change")
    required = [t for t in failing if _names_id(task, t)]
    # Tests in a module that does not import yet (its code is what the task adds) cannot
    # be listed by the baseline: the ids the task names in it are required as written.
    broken = {t.split("::")[0] for t in failing if t.endswith("::<collection>")}
    # ... and the module (package, crate) as a whole: once it builds, none of the tests
    # it holds may fail, named or not (a task names at most so many). Strict where the
    # base could not tell which of them passed: a bench of xmlparser found planted bugs
    # landing in tests the task did not name when only the named files were required.
    for path, rest, gone in _named_in(task, broken):
        if f"{path}{rest}" not in required:
            required.append(f"{path}{rest}")
        if collect_id(gone) not in required:
            required.append(collect_id(gone))
    if required:
        return Criterion("tests", required, every=True)
    named = [t for t in failing if _names(task, t)]
    if named:
        return Criterion("tests", named)
    if _ASKS_FOR_TESTS.search(task):
        return Criterion("tests", failing)
    return Criterion("change")


# Another language's test id: a Go package's import path or a Rust or JavaScript file,
# then ::names (``example.com/shop::TestTax``, ``src/lib.rs::tests::taxes``).
_OTHER_ID = r"((?:::[\w.-]+)+)"
_SOURCE_ID = re.compile(r"(?<![\w./-])([\w./-]+\.(?:rs|go|js|mjs|cjs|ts|mts|jsx|tsx))" + _OTHER_ID)


def _named_in(task: str, broken: set[str]) -> list[tuple[str, str, str]]:
    """(path, ::names, the broken module it stands in) for each test id the task writes
    in a module that did not build: pytest's files, Go packages, and any file of a suite
    that did not build at all (a Rust crate)."""
    found = [(path, rest, path) for path, rest in _TEST_ID.findall(task) if path in broken]
    for module in broken - {WHOLE_SUITE}:
        if not module.endswith(".py"):
            pattern = r"(?<![\w./-])(" + re.escape(module) + ")" + _OTHER_ID
            found += [(path, rest, module) for path, rest in re.findall(pattern, task)]
    if WHOLE_SUITE in broken:
        found += [(path, rest, WHOLE_SUITE) for path, rest in _SOURCE_ID.findall(task)]
    return found


def _names_id(task: str, test: str) -> bool:
    """The task writes this test's id, or the id of the test file or class that holds
    it, as a whole word: ``tests/test_a.py::Suite`` names ``tests/test_a.py::Suite::test_x``
    (and ``t.py::test_x`` names each ``t.py::test_x[case]``)."""
    parts = test.split("::")
    names = {"::".join(parts[:end]) for end in range(2, len(parts) + 1)}
    names.add(test.split("[")[0])
    if "test" in parts[0].rsplit("/", 1)[-1]:
        names.add(parts[0])  # a test file, not a module whose doctests fail
    return any(
        re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w\[/-]|::|\.\w)", task)
        for name in names
    )


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
