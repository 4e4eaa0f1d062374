"""The judge's records: what the checks observed on a tree, a stage's verdict, the
judgement on a whole change, and the one vocabulary of outcomes (``Outcome``).

Every outcome word, its exit code and its rank are defined here and nowhere else:
``check``, ``run``, the journal, the MCP tool, ``--json``, the bench and its reports use
``Outcome`` (``tests/test_layout.py`` fails on a second spelling outside ``judge/``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from selfforge.judge.rules.lint import LintFinding
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.stage_log import CheckRecord


class Outcome(StrEnum):
    """How a change was judged, or how an attempt ended without a judgement; the value
    is what the journal's ``attempts.outcome``, ``log --json`` and ``check --json``'s
    ``verdict`` hold. Listed best first: that order is the one ranking (``rank``).

    The judge decides the first four. ``no_edits`` (the model proposed nothing, so
    nothing was judged) and ``error`` (the attempt was stopped by an error, or the run
    died with it open) are the run's, kept here all the same: they share the journal's
    column, its ``--outcome`` filter and the dashboard with the judge's, and one
    vocabulary cannot drift apart from itself.
    """

    ACCEPTED = "accepted"
    NEEDS_REVIEW = "needs_review"  # every gate passed; a person must look at what it lists
    REJECTED = "rejected"
    NO_EDITS = "no_edits"
    COULD_NOT_JUDGE = "could_not_judge"  # the base builds nothing, nor does the change
    ERROR = "error"

    @property
    def exit_code(self) -> int:
        """``selfforge check``'s exit code for this outcome: 0 accepted, 1 rejected, 2
        could not judge (and an error), 3 needs review."""
        return _EXIT_CODES[self]

    @property
    def rank(self) -> int:
        """0 for the best outcome (accepted), then in the order listed."""
        return list(Outcome).index(self)

    @property
    def shown(self) -> str:
        """The words a person reads: ``needs review``, ``could not judge``."""
        return self.value.replace("_", " ")

    @classmethod
    def of_exit_code(cls, code: int) -> Outcome:
        """The verdict a ``selfforge check`` exit code stands for; any code but 0, 1 and
        3 is ``could_not_judge``."""
        verdicts = (cls.ACCEPTED, cls.REJECTED, cls.NEEDS_REVIEW)
        return next((o for o in verdicts if o.exit_code == code), cls.COULD_NOT_JUDGE)


_EXIT_CODES = {
    Outcome.ACCEPTED: 0,
    Outcome.NEEDS_REVIEW: 3,
    Outcome.REJECTED: 1,
    Outcome.NO_EDITS: 1,
    Outcome.COULD_NOT_JUDGE: 2,
    Outcome.ERROR: 2,
}


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


@dataclass(init=False)
class Verdict:
    """A gate's or a stage's verdict: ``outcome`` (given as a bool by a gate: True
    passes, False refuses), why, the feedback for the model's repair round. A stage
    also *returns* what it found that later stages or a person need: ``review``, what a
    person must look at (a person's change: listed, not refused), and ``findings``, the
    lint findings in the changed files (for the critic); the pipeline folds them
    (``judge/stages.run_pipeline``)."""

    outcome: Outcome
    reason: str
    feedback: str  # for the model's repair round
    details: list[str]
    review: list[str]
    findings: list[str]

    def __init__(
        self,
        outcome: Outcome | bool,
        reason: str = "",
        feedback: str = "",
        details: list[str] | None = None,
        *,
        review: list[str] | None = None,
        findings: list[str] | None = None,
    ) -> None:
        if not isinstance(outcome, Outcome):
            outcome = Outcome.ACCEPTED if outcome else Outcome.REJECTED
        self.outcome, self.reason, self.feedback = outcome, reason, feedback
        self.details = list(details or [])
        self.review, self.findings = list(review or []), list(findings or [])

    @property
    def ok(self) -> bool:
        """The gate passed (the change may go on to the next)."""
        return self.outcome is Outcome.ACCEPTED

    @property
    def needs_review(self) -> bool:
        return self.outcome is Outcome.NEEDS_REVIEW

    def noting(self, review: list[str]) -> Verdict:
        """This verdict with ``review`` items found before it (a passing one only: a
        refusal is the whole answer)."""
        if not review or not self.ok:
            return self
        return replace(self, review=[*review, *self.review])


PASS = Verdict(True, "all gates passed")
WHOLE_SUITE_PASSES = "the base does not build: judged as 'the whole suite must pass'"


@dataclass
class Judgement:
    """The judge's answer on one round's change: the pipeline's verdicts folded
    (``judge/stages.run_pipeline``). ``outcome`` is accepted, rejected, needs review or
    could not judge; ``review``, what a person must look at; ``checks``, every check the
    judge journaled for it, in order (what ``check --json`` lists as its steps). What
    ``check``, ``run``, the MCP tool and the bench say of a change derives from this."""

    outcome: Outcome
    reason: str
    feedback: str = ""  # for the model's repair round
    details: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    checks: list[CheckRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.ACCEPTED

    @property
    def needs_review(self) -> bool:
        return self.outcome is Outcome.NEEDS_REVIEW

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
