"""The judge's records: what the checks observed on a tree, a stage's verdict, and the
judgement on a whole change (its ``Outcome``: judge/outcome.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from selfforge.judge.outcome import Outcome
from selfforge.judge.rules.lint import LintFinding
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.stage_log import CheckRecord

if TYPE_CHECKING:
    from selfforge.judge.coverage import Coverage


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
    # Which of the change's code lines its tests ran (judge/coverage.py), when measured.
    coverage: Coverage | None = None

    def take(self, seen: Observed) -> None:
        """Keep what a stage measured: each thing ``seen`` holds replaces this one's."""
        for f in fields(self):
            value = getattr(seen, f.name)
            if value is not None and value != set():
                setattr(self, f.name, set(value) if isinstance(value, set) else value)


class _Decided:
    """What a verdict and a judgement both answer from their ``outcome``."""

    outcome: Outcome

    @property
    def ok(self) -> bool:
        """Accepted: the gate passed (the change may go on to the next), or the change
        may land."""
        return self.outcome is Outcome.ACCEPTED

    @property
    def needs_review(self) -> bool:
        return self.outcome is Outcome.NEEDS_REVIEW


@dataclass(init=False)
class Verdict(_Decided):
    """A gate's or a stage's verdict: ``outcome`` (given as a bool by a gate: True
    passes, False refuses), why, the feedback for the model's repair round. A stage
    also *returns* what it found that later stages or a person need: ``review``, what a
    person must look at (a person's change: listed, not refused), ``findings``, the
    lint findings in the changed files (for the critic), ``observed``, what it measured
    of the candidate's tree (lint, tests, flaky tests: the next baseline if it lands),
    and ``ahead``, runs it made for a later stage; the pipeline folds them into the
    candidate (``judge/stages.run_pipeline``)."""

    outcome: Outcome
    reason: str
    feedback: str  # for the model's repair round
    details: list[str]
    review: list[str]
    findings: list[str]
    observed: Observed | None  # what the stage measured of the candidate's tree
    ahead: dict[Any, Any]  # test runs it made ahead of a later stage (suite_runs.RunAhead)

    def __init__(
        self,
        outcome: Outcome | bool,
        reason: str = "",
        feedback: str = "",
        details: list[str] | None = None,
        *,
        review: list[str] | None = None,
        findings: list[str] | None = None,
        observed: Observed | None = None,
        ahead: dict[Any, Any] | None = None,
    ) -> None:
        if not isinstance(outcome, Outcome):
            outcome = Outcome.ACCEPTED if outcome else Outcome.REJECTED
        self.outcome, self.reason, self.feedback = outcome, reason, feedback
        self.details = list(details or [])
        self.review, self.findings = list(review or []), list(findings or [])
        self.observed, self.ahead = observed, dict(ahead or {})

    def noting(self, review: list[str]) -> Verdict:
        """This verdict with ``review`` items found before it (a passing one only: a
        refusal is the whole answer)."""
        if not review or not self.ok:
            return self
        return replace(self, review=[*review, *self.review])


PASS = Verdict(True, "all gates passed")
WHOLE_SUITE_PASSES = "the base does not build: judged as 'the whole suite must pass'"


@dataclass
class Judgement(_Decided):
    """The judge's answer on one round's change: the pipeline's verdicts folded
    (``judge/stages.run_pipeline``) and decided (``judge/decision.py``). ``outcome`` is
    accepted, rejected, needs review or could not judge; ``review``, what a person must
    look at; ``checks``, every check the judge journaled for it, in order (what ``check
    --json`` lists as its steps). What ``check``, ``run``, the MCP tool and the bench say
    of a change derives from this."""

    outcome: Outcome
    reason: str
    feedback: str = ""  # for the model's repair round
    details: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    checks: list[CheckRecord] = field(default_factory=list)
    coverage: Coverage | None = None  # the changed code's lines the tests ran

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code


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
