"""The judge's records: what the checks observed on a tree, and a stage's verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from selfforge.judge.rules.lint import LintFinding
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.command import CommandResult


@dataclass
class Observed:
    """What the checks saw on one state of the tree (the baseline or a candidate)."""

    lint: list[LintFinding] | None = None
    lint_result: CommandResult | None = None
    tests: TestReport | None = None
    tests_result: CommandResult | None = None
    flaky: set[str] = field(default_factory=set)  # outcome changed between runs of one tree
    # The change's own suite (its tests, new ones in): what shows a named new test.
    own_tests: TestReport | None = None
    # Why nothing of this (base) tree's suite builds or imports, when that is so: a
    # person's change is then judged by the whole suite (judge/broken_base.py).
    broken: str | None = None


@dataclass
class Verdict:
    ok: bool
    reason: str = ""
    feedback: str = ""  # for the model's repair round
    details: list[str] = field(default_factory=list)
    needs_review: bool = False  # every gate passed; a person must look at what it lists


PASS = Verdict(True, "all gates passed")
WHOLE_SUITE_PASSES = "the base does not build: judged as 'the whole suite must pass'"


@dataclass
class Criterion:
    """What a task must achieve to land, journaled with the attempt.

    ``tests``: the target tests go from failing to passing (every one of them when the
    task names them, ``every``; otherwise at least one), nothing regresses.
    ``change``: a non-empty change that the reviewers approve as doing the task.
    ``whole``: the base's suite does not build (a person's check): the whole suite, the
    base's tests on the change's code and the change's own, must build and pass.
    """

    kind: str  # "tests" | "change" | "whole"
    targets: list[str] = field(default_factory=list)
    every: bool = False  # the task named these tests: all of them must pass

    def describe(self) -> str:
        if self.kind == "tests":
            shown = ", ".join(self.targets[:5]) + (" …" if len(self.targets) > 5 else "")
            how = "every one" if self.every else "at least one"
            return f"{how} of {len(self.targets)} failing test(s) passes ({shown})"
        if self.kind == "whole":
            return WHOLE_SUITE_PASSES
        return "a non-empty change the reviewers approve as doing the task"
