"""What a task must achieve to land (its acceptance criterion).

A task that names failing tests by their ids (``tests/test_a.py::test_x``, or the file
or class that holds them) lands only when every one of them passes, with nothing
regressed: a change that fixes some and leaves others failing is not the task done. A
task aimed at failing tests more loosely — it names what they test (``add()``) or asks
for the failing tests to pass — lands when at least one of them goes from failing to
passing: partial progress on a broad request is progress. Any other task needs a
non-empty change that the reviewers approve as doing it. ``progress_gate`` says whether a
candidate meets its task's criterion.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from selfforge.judge.contract import is_infrastructure
from selfforge.judge.gates import state_of
from selfforge.judge.runners import registry
from selfforge.judge.runners.node import JS_SUFFIXES
from selfforge.judge.runners.results import (
    DOCTESTS,
    WHOLE_SUITE,
    TestReport,
    collect_id,
    worst,
)
from selfforge.judge.runners.testids import find_outcome, same_tests
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.verdict import PASS, Criterion, Observed, Outcome, Verdict
from selfforge.repo.testpaths import TestRule

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
    if baseline.broken:  # no test can show progress over a base on which none ran
        return Criterion("whole")
    tests = baseline.tests
    failing = sorted(tests.failing - baseline.flaky) if tests is not None else []
    named = named_tests(task, tests) if tests is not None else []
    # A test the task names that the base does not have (the change is to add it with its
    # code) is required too: a change that leaves it out is not the task done.
    absent = [t for t in named if find_outcome(tests, t) is None]
    if not failing:
        return Criterion("tests", absent, every=True) if absent else Criterion("change")
    required = [t for t in failing if _names_id(task, t)]
    required += [t for t in named if t in failing and t not in required]
    # A JavaScript test skipped because a hook of its block failed (the block's own id
    # fails): the task names it, so it must pass once the block runs.
    required += [t for t in named if t not in required and _held_by_failing_block(t, failing)]
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
    required += [t for t in absent if t not in required]
    if required:
        return Criterion("tests", required, every=True)
    loosely = [t for t in failing if _names(task, t)]
    if loosely:
        return Criterion("tests", loosely)
    if _ASKS_FOR_TESTS.search(task):
        return Criterion("tests", failing)
    return Criterion("change")


# Another language's test id: a Go package's import path or a Rust or JavaScript file,
# then ::names (``example.com/shop::TestTax``, ``src/lib.rs::tests::taxes``).
_OTHER_ID = r"((?:::[\w.-]+)+)"
_SOURCE_ID = re.compile(r"(?<![\w./-])([\w./-]+\.(?:rs|go|js|mjs|cjs|ts|mts|jsx|tsx))" + _OTHER_ID)


# Ids written without their file: a Rust test path through a test module
# (``tests::adds``), and Go's test functions (``TestTax``) in a Go suite.
_BARE_RUST = re.compile(r"(?<![\w:./-])((?:\w+::)+\w+)(?![\w:(])")
_BARE_GO = re.compile(r"(?<![\w:./-])(Test[A-Z0-9_]\w*)(?![\w:(])")
_GO_ID = re.compile(r"(?<![\w./-])([\w.-]+(?:/[\w.-]+)*::(?:Test|Example)\w*)(?![\w:(])")
# A Rust doctest's id: ``doc::src/lib.rs - Pair<A,B>::swap``, ``... (example 2)``. Its item
# has no space (a comma inside generics has none after it: ", " ends the id in a list).
_DOCTEST_ID = re.compile(
    r"(?<![\w:./-])(doc::[\w./-]+\.rs - (?:[^\s,;]|,(?=\S))+"
    r"(?: \(example \d+\))?(?: - compile(?: fail)?)?)"
)


def named_tests(task: str, tests: TestReport) -> list[str]:
    """The test ids the task writes out, each as the base knows it: its own id; a
    parametrized id the base holds under another parameter id (``same_case``); the base's
    ids that end with an id written without its file; else as written (a test the base
    does not have)."""
    known = list(tests.outcomes)
    written = ["".join(m) for m in _TEST_ID.findall(task)]
    written += _source_ids(task, known)
    written += [w for w in _GO_ID.findall(task) if not _SOURCE_ID.match(w)]
    written += [w for w in _BARE_RUST.findall(task) if {"tests", "test"} & set(w.split("::")[:-1])]
    written += [w.rstrip(".") for w in _DOCTEST_ID.findall(task)]
    if any(_is_go_id(t) for t in known):
        written += _BARE_GO.findall(task)
    cases = same_case([w for w in written if w not in tests.outcomes], known)
    found: list[str] = []
    for w in dict.fromkeys(written):
        w = cases.get(w, w)
        if not w.startswith(DOCTESTS) and any(t.startswith((w + "::", w + "[")) for t in known):
            continue  # a file, class or function that holds tests: _names_id's
        ends = [t for t in known if "." not in w.split("::")[0] and t.endswith("::" + w)]
        for t in ends if "/" not in w.split("::")[0] and ends else [w]:
            if t not in found:
                found.append(t)
    return found


def _source_ids(task: str, known: list[str]) -> list[str]:
    """The ids written with a Rust, Go or JavaScript file. A JavaScript test's id goes on
    through its suites (``src/a.spec.ts::block > round-trips a title``), whose names may
    hold spaces and punctuation: the longest id the base knows that is written there, or
    else the words up to the end of the list item (``, ``) or line."""
    found = []
    for m in _SOURCE_ID.finditer(task):
        written = m.group(0)
        if m.group(1).endswith(JS_SUFFIXES) and task.startswith(" > ", m.end()):
            here = [
                t
                for t in known
                if t.startswith(written + " > ")
                and task.startswith(t, m.start())
                and not task[m.start() + len(t) : m.start() + len(t) + 1].isalnum()
            ]
            rest = re.match(r"[^,\n]*", task[m.end() :])
            written = (
                max(here, key=len)
                if here
                else (written + (rest.group(0) if rest else "")).rstrip(". ")
            )
        found.append(written)
    return found


def _is_go_id(test: str) -> bool:
    head, _, name = test.partition("::")
    return name.startswith("Test") and "." not in head.rsplit("/", 1)[-1]


def same_case(named: list[str], known: list[str]) -> dict[str, str]:
    """A parametrized id written in a task that the base holds under another parameter
    id: a parameter that embeds the date and time (``test_x[2026-11-26 12:00:01.123]``,
    from when the task was written) never has the same id twice. It is the base's id of
    the same function whose parameter has the same shape (digits aside) and the same rank
    among those of that shape the task does not write as they are: the task's in sorted
    order (a time's order), the base's in collection order; only where both have as many."""

    def shape(test: str) -> tuple[str, str]:
        func, _, case = test.partition("[")
        return func, re.sub(r"\d", "0", case)

    wanted: dict[tuple[str, str], list[str]] = {}
    for t in sorted(set(named) - set(known)):
        if t.endswith("]") and "[" in t:
            wanted.setdefault(shape(t), []).append(t)
    held: dict[tuple[str, str], list[str]] = {}
    for t in known:
        if t.endswith("]") and "[" in t and t not in named and shape(t) in wanted:
            held.setdefault(shape(t), []).append(t)
    return {
        t: b
        for key, ts in wanted.items()
        if len(held.get(key, [])) == len(ts)
        for t, b in zip(ts, held[key], strict=True)
    }


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
    (and ``t.py::test_x`` names each ``t.py::test_x[case]``). A JavaScript test's id
    (``src/a.spec.ts::block > test``) names that test, not its ``describe`` block: a
    block's own id is the report of a hook that failed in it (``beforeAll``), gone once
    the block passes."""
    parts = test.split("::")
    names = {"::".join(parts[:end]) for end in range(2, len(parts) + 1)}
    names.add(test.split("[")[0])
    if "test" in parts[0].rsplit("/", 1)[-1]:
        names.add(parts[0])  # a test file, not a module whose doctests fail
    return any(
        re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w\[/-]|::|\.\w| > \S)", task)
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


def progress_gate(
    baseline: Observed,
    candidate: Observed,
    criterion: Criterion,
    *,
    infrastructure: list[str] | tuple[str, ...] = (),
    person: bool = False,
    diff: str = "",
    reviewed: frozenset[str] = frozenset(),
) -> Verdict:
    """A task aimed at failing tests lands only when they pass now: every one it names,
    or at least one when it named none. A named test the base does not have is not in the
    judging run (the base's tests): the change's own suite (``candidate.own_tests``) shows
    it — unless the change also brings test infrastructure (``infrastructure``: conftest,
    helpers, runner settings), which could fake that progress: then a person reviews it
    (``person``), or the proposal is refused. ``diff``: the change, which may rename
    what a target doctest documents (``Buffer::push_byte`` → ``Buffer::byte_push``).
    ``reviewed``: failing targets a person's change marks as expected failures, each a
    review item already (behaviour_change.py): the reviewer decides on those, not this."""
    base, cand, result = baseline.tests, candidate.tests, candidate.tests_result
    if criterion.kind != "tests" or result is None:
        return PASS
    if reviewed & set(criterion.targets):
        targets = [t for t in criterion.targets if t not in reviewed]
        if not targets:
            return Verdict(True, "the target tests are marked as expected failures: reviewed")
        criterion = Criterion("tests", targets, criterion.every)
    if base is None or cand is None:
        return _exit_code_progress(baseline, result)
    flaky = baseline.flaky | candidate.flaky
    alias = same_tests(base, cand, diff)  # a doctest follows the item the change renames
    fresh = {t for t in criterion.targets if find_outcome(base, t) is None}

    def outcome(test: str) -> str | None:
        if test in fresh:
            return find_outcome(candidate.own_tests, test)
        return find_outcome(cand, alias.get(test, test)) or _block_outcome(cand, test)

    fixed = [t for t in criterion.targets if t not in flaky and outcome(t) == "passed"]
    if criterion.every:
        verdict = _every_target(criterion.targets, fixed, outcome, cand, flaky, result)
        if verdict.ok and infrastructure and fresh:
            return _fakeable(sorted(fresh), list(infrastructure), person)
        return verdict
    if fixed:
        return Verdict(True, f"{len(fixed)} target test(s) now pass: " + ", ".join(fixed[:3]))
    still = [f"{t}: {state_of(cand, t)}" for t in criterion.targets[:10]]
    reason = "no progress: none of the target tests passes yet (" + "; ".join(still[:3]) + ")"
    feedback = (
        "Your change broke nothing, but the task is to make these failing tests pass, and "
        "they still do not:\n" + "\n".join(f"- {s}" for s in still) + f"\n\n{result.output}"
    )
    return Verdict(False, reason, feedback, still)


def _held_by_failing_block(test: str, failing: list[str]) -> bool:
    parts = test.split(" > ")
    return any(" > ".join(parts[:end]) in failing for end in range(1, len(parts)))


def _block_outcome(report: TestReport, test: str) -> str | None:
    """A JavaScript ``describe`` block's outcome where the runner reports none: Vitest
    writes a block's own entry (``src/a.spec.ts::block``) only when a hook in it failed.
    Once that hook runs, the block has passed when every test in it did."""
    inside = [o for t, o in report.outcomes.items() if t.startswith(test + " > ")]
    if not inside or not test.split("::")[0].endswith(JS_SUFFIXES):
        return None
    return "passed" if all(o in ("passed", "skipped") for o in inside) else worst(inside)


def infrastructure_changes(changed: dict[str, str], rule: TestRule) -> list[str]:
    """What the change touches of the test infrastructure other than files of tests:
    conftest.py, helpers and data in test folders, the runners' settings."""
    return sorted(p for p in changed if is_infrastructure(p, rule) and not _holds_tests(p, rule))


def _holds_tests(path: str, rule: TestRule) -> bool:
    """A file a runner runs as tests: a pytest module, ``x_test.go``, ``x.test.js``, a
    Rust integration test (``tests/it.rs``) or test module (``src/tests.rs``): the
    registry asks each runner."""
    return registry.is_test_file(path, rule)


def _fakeable(fresh: list[str], infrastructure: list[str], person: bool) -> Verdict:
    """Named tests that only the change's own suite shows passing, in a change that also
    changes the test infrastructure that suite runs with."""
    reason = (
        "progress claimed by new tests must not be fakeable by new infrastructure the same "
        f"change adds: {', '.join(fresh[:3])} pass only in the change's own suite, which "
        f"also runs with its changes to {', '.join(infrastructure[:3])}"
    )
    feedback = reason + "; leave the test infrastructure as it is, or change it apart."
    outcome = Outcome.NEEDS_REVIEW if person else Outcome.REJECTED
    return Verdict(outcome, reason, feedback, [reason])


def _every_target(
    targets: list[str],
    fixed: list[str],
    outcome: Callable[[str], str | None],
    cand: TestReport,
    flaky: set[str],
    result: CommandResult,
) -> Verdict:
    """The task named its tests: the ones still failing (or passing only sometimes) are
    named in the rejection."""
    if len(fixed) == len(targets):
        shown = ", ".join(targets[:3]) + (" …" if len(targets) > 3 else "")
        return Verdict(True, f"every named target test passes now ({len(targets)}): {shown}")

    def state(test: str) -> str:
        if test in flaky:
            return "flaky (its outcome changed between runs)"
        now = outcome(test)
        if now is None:
            return "not collected"
        message = cand.messages.get(test)
        return f"{now} ({message})" if message else now

    still = [f"{t}: {state(t)}" for t in targets if t not in fixed]
    reason = (
        f"not done: {len(still)} of the {len(targets)} target test(s) the task names still "
        "fail: " + "; ".join(still[:3])
    )
    feedback = (
        f"Your change broke nothing and {len(fixed)} of the tests the task names pass now, "
        "but the task is to make every one of them pass, and these still do not:\n"
        + "\n".join(f"- {s}" for s in still[:20])
        + f"\n\n{result.output}"
    )
    return Verdict(False, reason, feedback, still)


def _exit_code_progress(baseline: Observed, result: CommandResult) -> Verdict:
    base_ok = baseline.tests_result is None or baseline.tests_result.exit_code == 0
    if base_ok or result.exit_code != 0:
        return Verdict(
            False,
            "no progress: the test command's exit code did not change",
            "Make the failing tests pass.",
        )
    return Verdict(True, "the test command passes now")
