"""The bench's executors: the shared process pool and Ray executors
(``selfforge.run.executors``) bound to running one bench job.

Both take a Job and give back its Result; the scheduler (run.py) owns ordering, budget
and the results file, so the two backends write the same records.
"""

from __future__ import annotations

from selfforge.bench.records import Job, Result
from selfforge.bench.replay import run_job
from selfforge.judge.outcome import Outcome
from selfforge.run import executors
from selfforge.run.executors import BACKENDS, Executor, check_backend

__all__ = ["BACKENDS", "Executor", "PoolExecutor", "RayExecutor", "crashed", "make_executor"]


def crashed(job: Job, why: str) -> Result:
    return Result(
        instance_id=job.instance.instance_id,
        mode=job.mode,
        model=job.model,
        outcome=Outcome.ERROR,
        error=f"the worker running it died: {why}",
    )


class PoolExecutor(executors.PoolExecutor[Job, Result]):
    def __init__(self, workers: int) -> None:
        super().__init__(workers, run_job, crashed)


class RayExecutor(executors.RayExecutor[Job, Result]):
    """Each job is a Ray task with one CPU; the worker makes its own clone and sandbox.

    ``address`` None starts a local Ray instance with ``workers`` CPUs; "auto" or
    ``ray://host:10001`` joins a running cluster, whose nodes need selfforge installed
    and the instances' ``repo`` reachable (a URL, or a path on a shared file system).
    """

    def __init__(self, workers: int, address: str | None = None) -> None:
        super().__init__(workers, run_job, crashed, address)


def make_executor(backend: str, workers: int, address: str | None = None) -> Executor[Job, Result]:
    if check_backend(backend) == "pool":
        return PoolExecutor(workers)
    return RayExecutor(workers, address)
