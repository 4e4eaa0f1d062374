"""Where independent pieces of work run: a local process pool (default) or Ray tasks.

One abstraction for both users: ``bench run`` schedules its jobs here, and ``run
--parallel N`` checks its N candidates here. An executor runs one plain function on each
item it is given and hands back ``(item, result)`` as each finishes; when a worker dies,
``crashed(item, why)`` stands in for the result, so the caller always gets one per item.
Items, results and the function must be picklable (the function importable by name).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Generic, Protocol, TypeVar

from selfforge.errors import UsageError

BACKENDS = ("pool", "ray")

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol[T, R]):
    def submit(self, item: T) -> None: ...
    def next_done(self) -> tuple[T, R]: ...  # blocks until one item finishes
    def running(self) -> int: ...
    def close(self) -> None: ...  # drops items still running; their results are lost


class PoolExecutor(Generic[T, R]):
    """A local process pool; ``initializer`` runs once in each worker as it starts."""

    def __init__(
        self,
        workers: int,
        fn: Callable[[T], R],
        crashed: Callable[[T, str], R],
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        start_method: str | None = None,  # "fork": workers run the code this process loaded
    ) -> None:
        context = multiprocessing.get_context(start_method) if start_method else None
        self.pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=initializer, initargs=initargs
        )
        self.fn, self.crashed = fn, crashed
        self.futures: dict[Future[R], T] = {}

    def submit(self, item: T) -> None:
        self.futures[self.pool.submit(self.fn, item)] = item

    def next_done(self) -> tuple[T, R]:
        done, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
        future = min(done, key=lambda f: list(self.futures).index(f))
        item = self.futures.pop(future)
        try:
            return item, future.result()
        except Exception as exc:  # BrokenProcessPool: a worker was killed
            return item, self.crashed(item, f"{type(exc).__name__}: {exc}")

    def running(self) -> int:
        return len(self.futures)

    def close(self) -> None:
        if not self.futures:  # every item finished: the workers are idle
            self.pool.shutdown(wait=True)
            return
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:  # interrupted: an item still running is dropped, not awaited
            process.terminate()


class RayExecutor(Generic[T, R]):
    """Each item is a Ray task with one CPU.

    ``address`` None starts a local Ray instance with ``workers`` CPUs; "auto" or
    ``ray://host:10001`` joins a running cluster, whose nodes need selfforge installed.
    """

    def __init__(
        self,
        workers: int,
        fn: Callable[[T], R],
        crashed: Callable[[T, str], R],
        address: str | None = None,
        flag: str = "--backend ray",
    ) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(
                f"{flag} needs Ray: pip install 'selfforge[ray]' (or use --backend pool)"
            ) from None
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        self.task = ray.remote(num_cpus=1, max_retries=0)(fn)
        self.crashed = crashed
        self.refs: dict[Any, T] = {}

    def submit(self, item: T) -> None:
        self.refs[self.task.remote(item)] = item

    def next_done(self) -> tuple[T, R]:
        ready, _ = self.ray.wait(list(self.refs), num_returns=1)
        item = self.refs.pop(ready[0])
        try:
            return item, self.ray.get(ready[0])
        except Exception as exc:  # the task's worker died (RayTaskError, WorkerCrashedError)
            return item, self.crashed(item, f"{type(exc).__name__}: {str(exc)[:300]}")

    def running(self) -> int:
        return len(self.refs)

    def close(self) -> None:
        for ref in self.refs:
            self.ray.cancel(ref, force=True)
        self.refs.clear()
        if self.started_here:
            self.ray.shutdown()


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise UsageError(f"--backend {backend!r}: use one of {', '.join(BACKENDS)}")
    return backend
