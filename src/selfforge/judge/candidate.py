"""The records the judge's stages pass around: ``Candidate``, one round's change under
judgement (its commit, made before any check ran, is what lands), ``Judge``, what the
stages may use (never changed by them), and a test run kept for the stage that asks
for it (``TestRun`` under its ``RunKey``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from selfforge.config import Directives
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.stage_log import Recorder
from selfforge.judge.verdict import Criterion, Observed
from selfforge.repo.testpaths import TestRule
from selfforge.roles.caller import Caller


@dataclass(frozen=True)
class TestRun:
    """One run of a test command on a tree, and when it began (wall clock)."""

    result: CommandResult
    report: TestReport | None
    started_at: float


# (tree, git tree of the commit, command, only, ignore): what decides a run's results. The
# commit's content, not its id: a judged commit made twice differs only in its date.
RunKey = tuple[str, str, str, tuple[str, ...] | None, tuple[str, ...] | None]


@dataclass
class Candidate:
    """One round's change under judgement."""

    attempt_id: int
    round: int
    task: str
    base: str
    commit: str  # parent = base; holds exactly the applied edits; this is what lands
    tree: Path  # the worktree, restored to ``commit`` before and after each command
    changed: dict[str, str]  # path → git status letter
    diff: str
    criterion: Criterion
    critique: bool = True  # the critic may still speak (once per attempt)
    observed: Observed = field(default_factory=Observed)
    # findings and review: what the stages so far returned in their verdicts, folded by
    # run_pipeline (no stage writes them): lint findings in the changed files, and what a
    # person must look at
    findings: list[str] = field(default_factory=list)
    concerns: str = ""
    declared: tuple[str, ...] = ()  # tests the change says it changes on purpose
    review: list[str] = field(default_factory=list)
    # test runs made ahead of their stage (suite_runs.RunAhead), taken by the stage that asks
    ahead: dict[RunKey, TestRun] = field(default_factory=dict)
    # a measured goal's figures, measured before the reviewers run: they see them, and
    # they never stand in for them (a goal's measure decides before them)
    measured: list[str] = field(default_factory=list)
    # mutant runs (judge/new_tests.py): (mutant, tests run) -> the tests that failed, so
    # a coverage goal's credit never reruns a mutant the new-tests stage ran
    mutant_runs: dict[tuple[str, frozenset[str] | None], set[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Judge:
    """What the stages may use. Built once per run by the trusted, running selfforge."""

    directives: Directives
    protected: tuple[str, ...]
    baseline: Observed
    space: CheckSpace
    rule: TestRule
    caller: Caller
    record: Recorder
    state_dir: Path
    self_target: bool = False
    # A person's change (``selfforge check``): what needs a person (protected paths,
    # dependencies, a declared behaviour change) is listed for review, not refused.
    person: bool = False
