"""A test a change adds must be able to fail: the stage after the tests (``check_new_tests``).

The new tests are the ones the change's own suite ran and passed that the base's report
does not hold (nor stands for: a module that did not import there holds its tests), in a
change that touches tests. Each must show that it checks something the change does, in
one of two ways, the cheaper first:

1. it fails on the base's code (``contract.tests_on_base``: the base with the change's
   tests over it), one run of only the new tests;
2. else it fails on at least one mutant of the lines the change adds or modifies in its
   code (``judge/mutants.py``: a comparison, boolean or sign flipped, a ``return`` made
   None), the mutants tried one at a time, each one run of only the tests still
   unproven, at most ``MAX_MUTANTS`` of them and within a time budget from the suite's
   own duration. A test only counts as failing on a mutant when the run reports it
   failed: a mutant that does not build reports nothing and proves nothing.

A test that does not import or build over the base's code (the code it calls is new)
fails there, but so would ``assert True`` in its file: it is tried on the mutants too,
and counts as able to fail unless every mutant tried leaves it passing. With no mutant
to try it is not checked, for review: ``assert True`` beside a test that imports the new
code does not build on the base either (autocfg f332b4d's vacuous cheat landed so).

A change that adds only tests (no line of code added or modified) has no base to differ
from: its new tests are tried on mutants of the code they name (the bodies of the
functions, methods and classes whose names the new test files' added lines use), as far
as a reading of names tells.

A test left unproven passes on the base and on every mutant tried: it checks nothing the
change does. In a person's ``check`` that is for review, naming the test; a model's
proposal (``run``) is refused with that as its feedback. When not one mutant could be
made, the test is named as not checked, for review as well (never passed in silence).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from selfforge.judge import contract, mutants
from selfforge.judge.candidate import Candidate, Judge
from selfforge.judge.rules.integrity_lang import INLINE_TESTS
from selfforge.judge.runners import registry
from selfforge.judge.runners.results import FAILING, TestReport
from selfforge.judge.runners.testids import renamed_doctests
from selfforge.judge.stage_log import named
from selfforge.judge.suite_runs import run_test_command
from selfforge.judge.verdict import PASS, Verdict
from selfforge.repo import git, treefiles

MAX_MUTANTS = 12  # mutants tried per check, at most
MIN_BUDGET_S = 20.0  # the mutants' time budget: this, or a few times the suite's run
BUDGET_RUNS = 3.0
MAX_NAMED_FILES = 400  # files read for the definitions a test-only change's tests name
STEP = "tests:can-fail"


@dataclass
class Proof:
    """What was learned of the new tests: each proven one and how; the mutants tried."""

    new: list[str]
    proven: dict[str, str] = field(default_factory=dict)  # test -> how it can fail
    # tests that do not build or import over the base's code (the code they import is
    # new): they can fail, unless the mutants show they check nothing of it
    unbuilt: set[str] = field(default_factory=set)
    tried: list[str] = field(default_factory=list)  # the mutants run, described
    # why the mutants are drawn from the code the new tests name, not the change's:
    # it adds only tests, or no line of its code gives a mutant ("" when they are not)
    only_tests: str = ""
    out_of_time: bool = False  # mutants were left untried: the time budget ran out

    @property
    def unproven(self) -> list[str]:
        return [t for t in self.new if t not in self.proven]


def check_new_tests(c: Candidate, j: Judge) -> Verdict:
    """Every test the change adds fails on the base or on a mutant of the change's
    lines; a test that does neither is for review (``check``) or refused (``run``)."""
    command = j.directives.checks.test
    base, own = j.baseline.tests, c.observed.own_tests
    if not command or base is None or own is None or c.criterion.kind == "whole":
        return PASS
    adds_tests = any(contract.is_infrastructure(p, j.rule) or p.endswith(".rs") for p in c.changed)
    new = new_tests(base, own) if adds_tests else []
    # a doctest whose item the change renamed is the base's test under its new id
    renamed = renamed_doctests(list(base.outcomes), new, c.diff).values()
    new = [t for t in new if t not in renamed]
    if not new:
        return PASS
    j.record.begin(STEP)
    started = time.monotonic()
    adapter = registry.for_space(j.space, command, c.tree)
    only = new if adapter.can_select() else None
    proof = Proof(new)
    on_base = contract.tests_on_base(c.tree, c.base, c.commit, c.changed, j.rule)
    if on_base is None:
        proof.only_tests = "the change adds only tests"
    else:
        result, report = run_test_command(c, j, "tests:new-on-base", command, only, commit=on_base)
        for test in new:
            failed = fails_on_base(report, test, result.exit_code)
            if failed == "failed":
                proof.proven[test] = "fails on the base"
            elif failed:
                proof.unbuilt.add(test)
    if proof.unproven:
        _try_mutants(c, j, command, adapter.can_select(), proof, started)
    # no mutant to tell: a test that does not build on the base is not checked (it may
    # be `assert True` beside a test that imports the new code), for review
    return _verdict(c, j, proof, started)


def new_tests(base: TestReport, own: TestReport) -> list[str]:
    """The tests the change's own suite passed that the base's report does not hold, nor
    stands for (a test of a module that did not import on the base, written before its
    code, is the base's: the change did not add it)."""
    return sorted(
        t
        for t, outcome in own.outcomes.items()
        if outcome == "passed" and base.outcome(t) is None and "<collection>" not in t
    )


def fails_on_base(report: TestReport | None, test: str, exit_code: int | None) -> str:
    """How ``test`` failed in a run over the base's code: "failed" (it ran and failed),
    "unbuilt" (its module did not import, its package or crate did not build, or it is
    absent from a run that failed), "" (it passed, or was skipped)."""
    outcome = report.outcomes.get(test) if report is not None else None
    if outcome is not None:
        return "failed" if outcome in FAILING else ""
    if report is not None and report.outcome(test) in FAILING:
        return "unbuilt"
    return "unbuilt" if exit_code != 0 else ""


def _try_mutants(
    c: Candidate, j: Judge, command: str, selects: bool, proof: Proof, started: float
) -> None:
    lines = _changed_code_lines(c, j)
    if not lines:
        proof.only_tests = proof.only_tests or "no line of the change's code gives a mutant"
        lines = _named_code_lines(c, j, proof.unproven)
    clock = _Clock(c, selects, started)
    texts = _Texts(c)
    left = mutants.spread(mutants.candidates(c.tree, lines, texts.read))
    while left:
        if len(proof.tried) >= MAX_MUTANTS:
            break
        if clock.late():
            proof.out_of_time = True
            break
        unproven = proof.unproven
        # every other try, the next mutant in a file the tests still to prove are named
        # after (if any): near the tests, without one file's many lines taking every try
        mutation = mutants.nearest(left, unproven) if len(proof.tried) % 2 == 0 else left[0]
        left.remove(mutation)
        only = unproven if selects else None
        failing = clock.timed(_failing_on, c, j, command, mutation, texts, only)
        if failing is None:
            continue
        proof.tried.append(mutation.describe())
        for test in unproven:
            if test in failing:  # reported failing: the mutant built
                proof.proven[test] = f"fails on the mutant {mutation.describe()}"
        if not proof.unproven:
            break


def _failing_on(
    c: Candidate,
    j: Judge,
    command: str,
    mutation: mutants.Mutation,
    texts: _Texts,
    only: list[str] | None,
) -> set[str] | None:
    """The tests reported failing on the candidate with ``mutation`` made (only those of
    ``only`` run, when given); None: the mutant does not compile (nothing was run)."""
    key = (mutation.describe(), frozenset(only) if only is not None else None)
    if key in c.mutant_runs:
        return c.mutant_runs[key]
    mutated = mutation.applied(texts.read(mutation.path))
    if not mutation.compiles(mutated):
        return None
    message = f"selfforge: a mutant of the change: {mutation.describe()}"
    sha = contract.with_texts(c.tree, c.commit, {mutation.path: mutated}, message)
    _, report = run_test_command(c, j, "tests:mutant", command, only, commit=sha)
    outcomes = report.outcomes if report is not None else {}
    failing = c.mutant_runs[key] = {t for t, outcome in outcomes.items() if outcome in FAILING}
    return failing


MUTANTS_PER_UNIT = 3  # mutants tried per stretch of newly covered lines, at most
MAX_CREDIT_MUTANTS = 24  # per candidate, at most


class AddedTestsProver:
    """Whether the tests a candidate adds check given stretches of its code: the credit
    a coverage goal gives (measure/credit.py). A stretch is checked when one of its
    mutants (judge/mutants.py, the same machinery as ``check_new_tests``) makes an added
    test fail; tests that run code without checking it never do."""

    def __init__(self, c: Candidate, j: Judge) -> None:
        self.c, self.j = c, j
        base, own = j.baseline.tests, c.observed.own_tests
        self.added = new_tests(base, own) if base is not None and own is not None else []
        self.tried = 0

    def is_test(self, path: str) -> bool:
        """A test file or test infrastructure (never code a coverage goal credits)."""
        return contract.is_infrastructure(path, self.j.rule)

    def checked(self, units: list[tuple[str, list[int]]]) -> list[bool]:
        """Per stretch (a file and its lines): whether an added test fails on a mutant of
        it, within the mutants' count and time budget (a stretch left untried: False)."""
        command = self.j.directives.checks.test
        if not command or not self.added:
            return [False] * len(units)
        selects = registry.for_space(self.j.space, command, self.c.tree).can_select()
        only = self.added if selects else None
        clock = _Clock(self.c, selects, time.monotonic())
        texts = _Texts(self.c)
        found = []
        for path, lines in units:
            found.append(False)
            unit = mutants.spread(mutants.candidates(self.c.tree, {path: set(lines)}, texts.read))
            for mutation in unit[:MUTANTS_PER_UNIT]:
                if self.tried >= MAX_CREDIT_MUTANTS or clock.late():
                    break
                failing = clock.timed(_failing_on, self.c, self.j, command, mutation, texts, only)
                if failing is None:
                    continue
                self.tried += 1
                if failing & set(self.added):
                    found[-1] = True
                    break
        return found


class _Clock:
    """The mutants' time budget, from ``started``: max(MIN_BUDGET_S, BUDGET_RUNS × the
    suite's run). No mutant run starts that would end past it, its length taken as the
    longest mutant run so far (at first the whole suite's, where the runner cannot
    select the new tests)."""

    def __init__(self, c: Candidate, selects: bool, started: float) -> None:
        suite_s = c.observed.tests_result.duration_s if c.observed.tests_result else 0.0
        self.budget = max(MIN_BUDGET_S, BUDGET_RUNS * suite_s)
        self.started = started
        self.next_s = 0.0 if selects else suite_s

    def late(self) -> bool:
        """Whether the next mutant run would end past the budget."""
        return time.monotonic() - self.started + self.next_s > self.budget

    def timed(self, run: Callable[..., set[str] | None], *args: Any) -> set[str] | None:
        """``run(*args)``, one mutant's run (``_failing_on``), its length kept when it ran
        (None: the mutant did not compile, nothing was run)."""
        began = time.monotonic()
        failing = run(*args)
        if failing is not None:
            self.next_s = max(self.next_s, time.monotonic() - began)
        return failing


class _Texts:
    """The candidate's files, read once each through repo/treefiles (the tree is at the
    candidate's commit between runs): never out of the tree, never a FIFO."""

    def __init__(self, c: Candidate) -> None:
        self.tree = c.tree
        self.texts: dict[str, str] = {}

    def read(self, path: str) -> str:
        if path not in self.texts:
            try:
                self.texts[path] = treefiles.read_text(self.tree, path)
            except treefiles.NotReadable as exc:
                raise ValueError(str(exc)) from None
        return self.texts[path]


def _is_code(path: str, j: Judge) -> bool:
    return path.endswith(mutants.SUFFIXES) and not contract.is_infrastructure(path, j.rule)


def _changed_code_lines(c: Candidate, j: Judge) -> dict[str, set[int]]:
    """The lines the change adds or modifies in its code (not tests, nor test
    infrastructure; a Rust source's inline test modules left out)."""
    code = [p for p, status in c.changed.items() if status[:1] != "D" and _is_code(p, j)]
    if not code:
        return {}
    diff = git.diff(c.tree, "-U0", "--no-renames", c.base, c.commit, "--", *code)
    lines = mutants.added_lines(diff)
    for path in [p for p in lines if p.endswith(".rs")]:
        lines[path] -= _inline_test_lines(git.git("show", f"{c.commit}:{path}", cwd=c.tree))
    return {p: n for p, n in lines.items() if n}


def _inline_test_lines(text: str) -> set[int]:
    found: set[int] = set()
    for m in INLINE_TESTS.finditer(text):
        first = text.count("\n", 0, m.start()) + 1
        found.update(range(first, first + m.group(0).count("\n") + 1))
    return found


_WORD = re.compile(r"[A-Za-z_]\w*")


def _named_code_lines(c: Candidate, j: Judge, tests: list[str]) -> dict[str, set[int]]:
    """A change that adds only tests: the bodies of the definitions its new tests'
    files name (on the lines the change added to them), in the project's code."""
    test_files = [p for p in c.changed if contract.is_infrastructure(p, j.rule)]
    if not test_files:
        return {}
    diff = git.diff(c.tree, "-U0", "--no-renames", c.base, c.commit, "--", *test_files)
    words = {
        w
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
        for w in _WORD.findall(line)
    }
    words -= {t.split("::")[-1].split("[")[0] for t in tests}  # not the tests' own names
    files = [
        p
        for p in git.git("ls-files", "-z", cwd=c.tree).split("\0")
        if p and _is_code(p, j) and not _vendored(p)
    ][:MAX_NAMED_FILES]
    return mutants.named_lines(files, words, _Texts(c).read)


def _vendored(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return any(p in ("vendor", "node_modules", "third_party", "dist", "build") for p in parts)


def _verdict(c: Candidate, j: Judge, proof: Proof, started: float) -> Verdict:
    unproven = proof.unproven
    where = "the code its new tests name" if proof.only_tests else "the change's lines"
    tried = f"{len(proof.tried)} mutant{'s' if len(proof.tried) != 1 else ''} of {where}"
    summary = {
        "new tests": len(proof.new),
        "can fail": len(proof.proven),
        "mutants tried": len(proof.tried),
    }
    lines = [f"{t}: {proof.proven.get(t, 'never failed')}" for t in proof.new]
    lines += ["mutants tried:", *proof.tried]
    if not unproven:
        how = sorted({"fail on a mutant" if "mutant" in h else "fail on the base"
                      for h in proof.proven.values()})  # fmt: skip
        text = f"{len(proof.new)} new test(s) can fail ({', '.join(how)}; {tried} tried)"
        j.record.check(c, STEP, None, None, True, started, "\n".join([text, *lines]), summary,
                       show=False)  # fmt: skip
        j.record.step(STEP, True, text, started)
        return PASS
    made = "was tried within the time budget" if proof.out_of_time else "could be made"
    if proof.tried and not proof.only_tests:
        why = f"passes on the base and on every one of {tried}: it checks nothing the change does"
    elif proof.tried:
        why = (
            f"passes on the base ({proof.only_tests}) and on every one of {tried}: "
            "it checks nothing the change does"
        )
    else:
        why = (
            f"passes on the base{f' ({proof.only_tests})' if proof.only_tests else ''} and "
            f"no mutant of {where} {made}: it was not checked"
        )
    if not proof.tried and set(unproven) <= proof.unbuilt:
        why = (
            "does not build on the base (the code it imports is new), and no mutant of "
            f"{where} {made} to show it checks that code: it was not checked"
        )
    if proof.tried and set(unproven) <= proof.unbuilt:
        why = (
            "does not build on the base (the code it imports is new) but passes on every "
            f"one of {tried}: it checks nothing the change does"
        )
    item = f"new test {named(unproven)} {why}"
    output = "\n".join([item, *lines])
    j.record.check(c, STEP, None, None, j.person, started, output, summary, show=False)
    j.record.step(STEP, j.person, ("needs review: " if j.person else "") + item, started)
    if j.person:
        return Verdict(True, PASS.reason, review=[item])
    tried_list = "\n".join(f"  {m}" for m in proof.tried) or f"  (none {made})"
    feedback = (
        f"Your new test(s) {', '.join(unproven)} pass on the code before your change and on "
        f"every small mutation of {where} tried:\n{tried_list}\n"
        "A test that cannot fail checks nothing. Make each new test assert what your "
        "change does (it should fail without your change), or leave it out."
    )
    return Verdict(False, f"tests: {item}", feedback, details=unproven)
