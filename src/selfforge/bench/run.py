"""``bench run``: schedule jobs on an executor, append each result as it finishes.

Resumable: a job whose result is already in the results file is skipped. The global
budget is checked before each job starts: once the results' spend reaches it, nothing
new starts, the jobs running finish, and a rerun with a higher budget continues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.bench.executors import Executor
from selfforge.bench.records import (
    NEGATIVE_KINDS,
    Instance,
    Job,
    Mode,
    Result,
    append_result,
    read_results,
)
from selfforge.errors import UsageError


@dataclass
class Progress:
    total: int
    done: int = 0
    solved: int = 0  # model and gold jobs
    rejected: int = 0  # negative jobs the judge rejected, as it should
    not_drawn: int = 0  # negatives of a kind the instance has none of (Result.skipped)
    spent_usd: float = 0.0
    errors: int = 0


@dataclass
class BenchRun:
    results: list[Result] = field(default_factory=list)  # previous and new, in job order
    new: int = 0
    stop_reason: str = "every job finished"


def make_jobs(
    instances: list[Instance],
    modes: list[Mode],
    model: str,
    work_dir: Path,
    *,
    max_repairs: int | None = None,
    keep_clone: bool = False,
    timeout_s: float = 900,
    kinds: tuple[str, ...] = NEGATIVE_KINDS,
    repeat: int = 1,
    proposers: tuple[str, ...] = ("oneshot",),
) -> list[Job]:
    """A job per instance and mode; model jobs, one per proposer; negatives, one per
    kind (a kind the instance has none of ends as a row that says why, counted apart);
    all of it ``repeat`` times, the runs after the first as jobs of their own (the report
    says how often they agree). An impossible instance makes model jobs only: its gold
    fails by construction."""
    jobs = []
    for run in range(repeat):
        for instance, mode, kind, proposer in _each(instances, modes, kinds, proposers):
            jobs.append(
                Job(
                    instance=instance,
                    mode=mode,
                    kind=kind,
                    proposer=proposer,
                    model=model if mode == "model" else f"script:{mode}",
                    # The scripted gold has nothing to repair with: one proposal is
                    # the test.
                    max_repairs=0 if mode != "model" else max_repairs,
                    work_dir=str(work_dir),
                    keep_clone=keep_clone,
                    timeout_s=timeout_s,
                    repeat=run,
                )
            )
    if not jobs:
        raise UsageError("no job to run: the instances file is empty")
    return jobs


def _each(
    instances: list[Instance],
    modes: list[Mode],
    kinds: tuple[str, ...],
    proposers: tuple[str, ...],
) -> list[tuple[Instance, Mode, str | None, str]]:
    return [
        (instance, mode, kind, proposer)
        for instance in instances
        for mode in modes
        if mode == "model" or not instance.impossible
        for kind in (kinds if mode == "negative" else (None,))
        for proposer in (proposers if mode == "model" else ("oneshot",))
    ]


def run_bench(
    jobs: list[Job],
    results_path: Path,
    executor: Executor[Job, Result],
    *,
    workers: int,
    budget_usd: float | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> BenchRun:
    # A job's last judged line counts. A job that ended in a harness error (a clone cut off
    # by Ctrl-C, a dead worker) is run again; a job that was judged is never redone.
    previous = {r.key: r for r in read_results(results_path) if r.error is None}
    finished = [previous[j.key] for j in jobs if j.key in previous]
    todo = [j for j in jobs if j.key not in previous]
    progress = Progress(total=len(jobs), done=len(finished))
    for result in finished:
        _count(progress, result)
    if on_progress:
        on_progress(progress)
    outcome = BenchRun()
    new: dict[str, Result] = {}
    try:
        while todo or executor.running():
            while todo and executor.running() < workers:
                if budget_usd is not None and progress.spent_usd >= budget_usd:
                    outcome.stop_reason = (
                        f"the budget of ${budget_usd:.2f} is spent "
                        f"(${progress.spent_usd:.4f}); rerun with a higher --budget-usd "
                        "to continue"
                    )
                    todo = []
                    break
                executor.submit(todo.pop(0))
            if not executor.running():
                break
            job, result = executor.next_done()
            append_result(results_path, result)
            new[job.key] = result
            progress.done += 1
            _count(progress, result)
            if on_progress:
                on_progress(progress)
    finally:
        executor.close()
    outcome.new = len(new)
    outcome.results = [
        new.get(j.key) or previous[j.key] for j in jobs if j.key in new or j.key in previous
    ]
    return outcome


def _count(progress: Progress, result: Result) -> None:
    progress.spent_usd += result.cost_usd
    progress.errors += int(result.error is not None)
    if result.skipped is not None:
        progress.not_drawn += 1
    elif result.error is None and result.mode == "negative":
        progress.rejected += int(not result.landed)
    else:
        progress.solved += int(result.solved)
