"""Best of N (``run --parallel N``): one task, N candidates, the best passing one lands.

    propose ×N (one model call each; each candidate is an attempt with its own worktree)
      → commit each change (what the checks judge is what lands)
      → the judge's checks on every candidate at once, on an executor (a local process
        pool, or Ray tasks with ``--backend ray``): min(N, cores) workers
      → rank the candidates that passed every check; best first, the model stages
        (critique, review) until one is approved → land that one, by the usual path
      → every other candidate is journaled with why it did not land

Each candidate is a single proposal: no repair rounds (the N proposals take their place).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import signal
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.config import Directives
from selfforge.errors import UsageError
from selfforge.journal.store import Journal
from selfforge.judge.sandbox.command import CheckSpace
from selfforge.judge.stage_log import Recorder
from selfforge.judge.stages import PIPELINE, Candidate, Judge, critique, review, run_pipeline
from selfforge.judge.verdict import Judgement, Observed, Outcome, Verdict
from selfforge.repo import git
from selfforge.repo.testpaths import TestRule
from selfforge.run.attempt import Attempt, AttemptResult
from selfforge.run.engine import Engine
from selfforge.run.executors import Executor, PoolExecutor, RayExecutor, check_backend
from selfforge.ui.reporters import BaseReporter, Reporter

MODEL_STAGES = (critique, review)  # they call the model: the main process runs them
CHECK_STAGES = tuple(stage for stage in PIPELINE if stage not in MODEL_STAGES)


@dataclass
class CheckJob:
    """One candidate's checks, as a worker receives them (picklable, no model)."""

    number: int  # k of the cycle's candidates
    candidate: Candidate
    directives: Directives
    protected: tuple[str, ...]
    baseline: Observed
    space: CheckSpace
    rule: TestRule
    repo: Path
    state_dir: Path  # the repository's .selfforge/ (the journal)
    scratch: Path  # this candidate's own state (its copy of the index): no two share one
    run_id: int
    self_target: bool


@dataclass
class Checked:
    verdict: Verdict | Judgement
    observed: Observed
    steps: list[tuple[str, bool | None, str, float]] = field(default_factory=list)


class _Labelled:
    """Candidate k's steps, named ``#k tests`` and so on, on the run's reporter."""

    def __init__(self, inner: Reporter, k: int) -> None:
        self.inner, self.prefix = inner, f"#{k} "

    def begin(self, name: str) -> None:
        self.inner.begin(self.prefix + name)

    def attempt(self, cycle: int, task: str) -> None:
        self.inner.attempt(cycle, task)

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.inner.step(self.prefix + name, ok, detail, seconds)

    def outcome(self, outcome: str, reason: str) -> None:
        self.inner.outcome(outcome, reason)

    def info(self, message: str) -> None:
        self.inner.info(message)


class _Steps(BaseReporter):
    """A worker's steps, replayed by the main process's reporter when the job is done."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, bool | None, str, float]] = []

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.steps.append((name, ok, detail, seconds))


def check_candidate(job: CheckJob) -> Checked:
    """Run the judge's checks (every stage but the model's) on one committed candidate.

    Runs in a worker: journals its checks through a connection of its own.
    """
    steps = _Steps()
    with Journal(job.state_dir / "journal.db") as journal:
        judge = Judge(
            directives=job.directives,
            protected=job.protected,
            baseline=job.baseline,
            space=job.space,
            rule=job.rule,
            caller=None,  # type: ignore[arg-type]  # CHECK_STAGES never call the model
            record=Recorder(journal, steps, job.run_id),
            state_dir=job.scratch,
            self_target=job.self_target,
        )
        judgement = run_pipeline(job.candidate, judge, CHECK_STAGES)
    return Checked(judgement, job.candidate.observed, steps.steps)


def _crashed(job: CheckJob, why: str) -> Checked:
    return Checked(Verdict(False, f"its checks could not finish: {why}"), Observed())


def _worker_start(lock_fd: int | None) -> None:
    """A pool worker: let go of the run lock it inherited, and die with the run."""
    if lock_fd is not None:
        with contextlib.suppress(OSError):
            os.close(lock_fd)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)


def workers_for(n: int) -> int:
    """Concurrent checks: one per candidate, at most one per core."""
    return max(1, min(n, os.cpu_count() or 1))


def make_checker(
    backend: str, n: int, lock_fd: int | None, self_target: bool = False
) -> Executor[CheckJob, Checked]:
    """The executor of a run's candidate checks. Pool workers are forked from this process,
    so they judge with the selfforge loaded at the start of the run (a landed change to
    selfforge itself never judges later cycles); Ray workers import it from disk."""
    workers = workers_for(n)
    if check_backend(backend) == "ray":  # a local Ray instance: the worktrees are here
        if self_target:
            raise UsageError(
                "--backend ray cannot check selfforge's own candidates: Ray workers import "
                "selfforge from disk, where a landed change would judge the next cycles; "
                "use --backend pool"
            )
        return RayExecutor(workers, check_candidate, _crashed)
    return PoolExecutor(
        workers,
        check_candidate,
        _crashed,
        initializer=_worker_start,
        initargs=(lock_fd,),
        start_method="fork",
    )


# --- ranking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rank:
    """How good a candidate that passed every check is; compared in this order."""

    number: int
    fixed: int  # target tests that went from failing to passing
    passing: int  # tests that pass now and did not before (targets or not)
    lint: int  # lint findings left
    size: int  # changed lines

    def key(self) -> tuple[int, int, int, int, int]:
        return (-self.fixed, -self.passing, self.lint, self.size, self.number)


def rank_of(number: int, c: Candidate, baseline: Observed) -> Rank:
    obs, base = c.observed, baseline.tests
    cand = obs.tests
    flaky = baseline.flaky | obs.flaky
    fixed = passing = 0
    if cand is not None:
        targets = c.criterion.targets if c.criterion.kind == "tests" else []
        fixed = sum(1 for t in targets if t not in flaky and cand.outcome(t) == "passed")
        before = base.passed if base is not None else set()
        passing = len(cand.passed - before - flaky)
    size = sum(
        1
        for line in c.diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )
    return Rank(number, fixed, passing, len(obs.lint or []), size)


def why_not(best: Rank, other: Rank) -> str:
    """Why ``best`` landed rather than ``other`` (the first count that tells them apart)."""
    k = best.number
    if best.fixed != other.fixed:
        return f"candidate {k} fixed more target tests ({best.fixed} vs {other.fixed})"
    if best.passing != other.passing:
        return f"candidate {k} makes more tests pass ({best.passing} vs {other.passing})"
    if best.lint != other.lint:
        return f"candidate {k} leaves fewer lint findings ({best.lint} vs {other.lint})"
    if best.size != other.size:
        return f"candidate {k}'s change is smaller ({best.size} vs {other.size} changed lines)"
    return f"candidate {k} came first (equal on every count)"


# --- one cycle ------------------------------------------------------------------------------


def best_of(
    engine: Engine,
    checker: Executor[CheckJob, Checked],
    n: int,
    cycle: int,
    task: str,
    base: str,
    baseline: Observed,
    edit_format: str | None = None,
) -> tuple[list[AttemptResult], AttemptResult]:
    """Attempt ``task`` with ``n`` candidates; returns every candidate's result (in order)
    and the one that stands for the cycle (the landed one, else the best of the rest)."""
    attempts = [
        Attempt(
            dataclasses.replace(engine, reporter=_Labelled(engine.reporter, k)),
            cycle,
            task,
            base,
            baseline,
            edit_format,
            f"attempt-{k}",
            candidate=k,
        )
        for k in range(1, n + 1)
    ]
    results: dict[int, AttemptResult] = {}
    for a in attempts:
        a.open()
    bundle = attempts[0].context()  # every worktree is at the base: one context serves all
    jobs = _propose_all(engine, attempts, bundle, results)
    if jobs:
        engine.reporter.begin(f"checking {len(jobs)} candidate(s) at once")
    for job in jobs:
        checker.submit(job)
    while checker.running():
        job, checked = checker.next_done()
        _take(attempts[job.number - 1], job.number, checked, results)
    _choose(engine, attempts, baseline, results)
    finished = [a.finish(results[k]) for k, a in enumerate(attempts, 1)]
    return finished, min(finished, key=lambda r: r.outcome.rank)


def _propose_all(
    engine: Engine, attempts: list[Attempt], bundle: object, results: dict[int, AttemptResult]
) -> list[CheckJob]:
    """N proposals (N model calls, each journaled with its attempt), each committed in its
    own worktree; a change identical to an earlier candidate's is not checked twice."""
    jobs: list[CheckJob] = []
    trees: dict[str, int] = {}
    for k, a in enumerate(attempts, 1):
        applied = a.proposer(bundle).propose("", 0).applied  # type: ignore[arg-type]
        if applied.n_edits == 0:
            a.e.reporter.step("apply", None, "the model proposed no edits")
            results[k] = a.result(Outcome.NO_EDITS, "the model proposed no edits")
            continue
        made = a.commit(applied)
        if isinstance(made, Verdict):
            results[k] = a.result(Outcome.REJECTED, made.reason)
            continue
        tree = git.tree_of(a.wt, made.commit)
        if tree in trees:
            same = trees[tree]
            results[k] = a.result(Outcome.REJECTED, f"the same change as candidate {same}")
            continue
        trees[tree] = k
        jobs.append(_job(engine, a, k, made))
    return jobs


def _job(engine: Engine, a: Attempt, k: int, c: Candidate) -> CheckJob:
    return CheckJob(
        number=k,
        candidate=c,
        directives=engine.d,
        protected=tuple(engine.loaded.protected),
        baseline=a.baseline,
        space=engine.space,
        rule=engine.rule,
        repo=engine.ws.root,
        state_dir=engine.ws.state,
        scratch=_scratch(engine.ws.state, k),
        run_id=engine.run_id,
        self_target=engine.self_target,
    )


def _scratch(state: Path, k: int) -> Path:
    """Candidate k's state directory, with a copy of the codebase index: each check brings
    the index up to its own tree (for the blast radius), and no two may write one index."""
    scratch = state / "candidates" / str(k)
    scratch.mkdir(parents=True, exist_ok=True)
    index = state / "index.db"
    if index.exists():
        with sqlite3.connect(index) as source, sqlite3.connect(scratch / "index.db") as copy:
            source.backup(copy)
    return scratch


def _take(a: Attempt, k: int, checked: Checked, results: dict[int, AttemptResult]) -> None:
    """A candidate's checks came back: show its steps, keep what they observed."""
    assert a.candidate is not None
    a.candidate.observed = a.observed = checked.observed
    for name, ok, detail, seconds in checked.steps:
        a.e.reporter.step(name, ok, detail, seconds)
    if not checked.verdict.ok:
        a.e.reporter.step("verdict", False, checked.verdict.reason)
        a.failures.append(checked.verdict.reason)
        results[k] = a.result(Outcome.REJECTED, checked.verdict.reason)


def _choose(
    engine: Engine, attempts: list[Attempt], baseline: Observed, results: dict[int, AttemptResult]
) -> None:
    """Best first: the model's stages, until one is approved; it lands, the rest do not."""
    passed = [k for k in range(1, len(attempts) + 1) if k not in results]
    ranks = {
        k: rank_of(k, attempts[k - 1].candidate, baseline)  # type: ignore[arg-type]
        for k in passed
    }
    # No repair round follows in best of N: a critic's concerns go to the reviewers.
    once = engine.d.model_copy(deep=True)
    once.limits.max_repairs = 0
    chosen: Rank | None = None
    for rank in sorted(ranks.values(), key=Rank.key):
        a = attempts[rank.number - 1]
        if chosen is not None:
            reason = "passed every check, not chosen: " + why_not(chosen, rank)
            results[rank.number] = a.result(Outcome.REJECTED, reason)
            continue
        verdict = _model_stages(a, once)
        if verdict.ok and a.goal:  # measured one at a time, the checks all done
            verdict = a.measure_goal(a.candidate, verdict)  # type: ignore[arg-type]
        if verdict.ok:
            chosen = rank
            results[rank.number] = a.land()
        else:
            results[rank.number] = a.result(Outcome.REJECTED, verdict.reason)


def _model_stages(a: Attempt, directives: Directives) -> Judgement:
    assert a.candidate is not None
    return run_pipeline(a.candidate, a.judge(directives), MODEL_STAGES)


__all__ = ["CHECK_STAGES", "Rank", "best_of", "make_checker", "why_not"]
