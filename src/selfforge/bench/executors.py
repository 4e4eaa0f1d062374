"""Where jobs run: a local process pool (default) or Ray tasks (``--backend ray``).

Both take a Job and give back its Result; the scheduler (run.py) owns ordering, budget
and the results file, so the two backends write the same records.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol

from selfforge.bench.records import Job, Result
from selfforge.bench.replay import run_job
from selfforge.errors import UsageError

BACKENDS = ("pool", "ray")


class Executor(Protocol):
    def submit(self, job: Job) -> None: ...
    def next_done(self) -> tuple[Job, Result]: ...  # blocks until one job finishes
    def running(self) -> int: ...
    def close(self) -> None: ...  # drops jobs still running; their results are lost


def crashed(job: Job, why: str) -> Result:
    return Result(
        instance_id=job.instance.instance_id,
        mode=job.mode,
        model=job.model,
        outcome="error",
        error=f"the worker running it died: {why}",
    )


class PoolExecutor:
    def __init__(self, workers: int) -> None:
        self.pool = ProcessPoolExecutor(max_workers=workers)
        self.futures: dict[Future[Result], Job] = {}

    def submit(self, job: Job) -> None:
        self.futures[self.pool.submit(run_job, job)] = job

    def next_done(self) -> tuple[Job, Result]:
        done, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
        future = min(done, key=lambda f: list(self.futures).index(f))
        job = self.futures.pop(future)
        try:
            return job, future.result()
        except Exception as exc:  # BrokenProcessPool: a worker was killed
            return job, crashed(job, f"{type(exc).__name__}: {exc}")

    def running(self) -> int:
        return len(self.futures)

    def close(self) -> None:
        if not self.futures:  # every job finished: the workers are idle
            self.pool.shutdown(wait=True)
            return
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:  # interrupted: a job still running is dropped, not awaited
            process.terminate()


class RayExecutor:
    """Each job is a Ray task with one CPU; the worker makes its own clone and sandbox.

    ``address`` None starts a local Ray instance with ``workers`` CPUs; "auto" or
    ``ray://host:10001`` joins a running cluster, whose nodes need selfforge installed
    and the instances' ``repo`` reachable (a URL, or a path on a shared file system).
    """

    def __init__(self, workers: int, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(
                "--backend ray needs Ray: pip install 'selfforge[ray]' (or use --backend pool)"
            ) from None
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        self.task = ray.remote(num_cpus=1, max_retries=0)(run_job)
        self.refs: dict[Any, Job] = {}

    def submit(self, job: Job) -> None:
        self.refs[self.task.remote(job)] = job

    def next_done(self) -> tuple[Job, Result]:
        ready, _ = self.ray.wait(list(self.refs), num_returns=1)
        job = self.refs.pop(ready[0])
        try:
            return job, self.ray.get(ready[0])
        except Exception as exc:  # the task's worker died (RayTaskError, WorkerCrashedError)
            return job, crashed(job, f"{type(exc).__name__}: {str(exc)[:300]}")

    def running(self) -> int:
        return len(self.refs)

    def close(self) -> None:
        for ref in self.refs:
            self.ray.cancel(ref, force=True)
        self.refs.clear()
        if self.started_here:
            self.ray.shutdown()


def make_executor(backend: str, workers: int, address: str | None = None) -> Executor:
    if backend == "pool":
        return PoolExecutor(workers)
    if backend == "ray":
        return RayExecutor(workers, address)
    raise UsageError(f"--backend {backend!r}: use one of {', '.join(BACKENDS)}")
