"""Resource limits of one check: memory and number of processes.

A control group per check when the machine lets us make one (cgroup v2, or v1's
``memory`` and ``pids`` hierarchies): it caps the whole process tree, tells afterwards
whether a limit was hit, and kills every member at the end. Elsewhere the same limits are
set as rlimits on the sandbox's first process (inherited by all it starts). ``enforcement``
says which is in force, for ``selfforge doctor``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.errors import UsageError

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 4096
    processes: int = 256


@functools.cache
def _own_cgroups() -> dict[str, Path]:
    """This process's cgroup directory per controller ('' for the v2 unified tree)."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "" and (CGROUP_ROOT / "cgroup.controllers").exists():
            found[""] = CGROUP_ROOT / rel
        for name in controllers.split(","):
            if name in ("memory", "pids") and (CGROUP_ROOT / name).is_dir():
                found[name] = CGROUP_ROOT / name / rel
    return found


@functools.cache
def enforcement() -> str:
    """'cgroup v2', 'cgroup v1' or 'rlimit': how limits are enforced on this machine."""
    own = _own_cgroups()
    v2 = own.get("")
    if v2 is not None and _can_make_child(v2, ("memory.max", "pids.max")):
        return "cgroup v2"
    v1 = "memory" in own and "pids" in own
    if (
        v1
        and _can_make_child(own["memory"], ("memory.limit_in_bytes",))
        and _can_make_child(own["pids"], ("pids.max",))
    ):
        return "cgroup v1"
    return "rlimit"


def _can_make_child(parent: Path, files: tuple[str, ...]) -> bool:
    probe = parent / f"selfforge-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return all((probe / f).exists() for f in files)
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@dataclass
class Guard:
    """The limits of one running check; ``enter`` runs in the child before exec."""

    limits: Limits
    mode: str = field(default_factory=enforcement)
    dirs: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The selfforge process's pid in the name: a group whose process is gone was left
        # by a run killed before it could remove it (``leftover_groups``).
        name = f"{GROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        own = _own_cgroups()
        mem = self.limits.memory_mb * 1024 * 1024
        try:
            if self.mode == "cgroup v2":
                d = own[""] / name
                d.mkdir()
                self.dirs = [d]
                (d / "memory.max").write_text(str(mem))
                (d / "pids.max").write_text(str(self.limits.processes))
                with contextlib.suppress(OSError):
                    (d / "memory.swap.max").write_text("0")
            elif self.mode == "cgroup v1":
                m, p = own["memory"] / name, own["pids"] / name
                m.mkdir()
                self.dirs.append(m)
                p.mkdir()
                self.dirs.append(p)
                (m / "memory.limit_in_bytes").write_text(str(mem))
                (p / "pids.max").write_text(str(self.limits.processes))
        except OSError:  # the machine changed its mind: fall back to rlimits
            self.cleanup()
            self.mode = "rlimit"

    def prelude(self) -> list[str]:
        """A shell that joins the groups (or sets the rlimits), then execs the command."""
        if self.dirs:
            joins = "; ".join(f'echo $$ > "{d}/cgroup.procs"' for d in self.dirs)
            return ["/bin/sh", "-c", f'{joins}; ulimit -c 0; exec "$@"', "sh"]
        kb = self.limits.memory_mb * 1024
        n = self.limits.processes
        limits = f"ulimit -c 0; ulimit -v {kb} 2>/dev/null; ulimit -p {n} 2>/dev/null"
        return ["/bin/sh", "-c", f'{limits}; exec "$@"', "sh"]

    def hit(self, output: str) -> str | None:
        """The limit the check ran into, if any: 'memory' or 'processes'."""
        if self.mode == "cgroup v2" and self.dirs:
            events = _read_events(self.dirs[0] / "memory.events")
            if events.get("oom_kill", 0) or events.get("max", 0):
                return "memory"
            if _read_events(self.dirs[0] / "pids.events").get("max", 0):
                return "processes"
        elif self.mode == "cgroup v1" and len(self.dirs) == 2:
            if _read_int(self.dirs[0] / "memory.failcnt"):
                return "memory"
            if _read_events(self.dirs[1] / "pids.events").get("max", 0):
                return "processes"
        if "MemoryError" in output or "Cannot allocate memory" in output:
            return "memory"
        if "Cannot fork" in output or ("temporarily unavailable" in output and "fork" in output):
            return "processes"
        return None

    def cleanup(self) -> None:
        """Kill whatever is still in the groups, then remove them."""
        for d in self.dirs:
            kill = d / "cgroup.kill"
            if kill.exists():
                with contextlib.suppress(OSError):
                    kill.write_text("1")
            for _ in range(50):
                try:
                    pids = [int(p) for p in (d / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                time.sleep(0.01)
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                d.rmdir()
        self.dirs = []


GROUP_PREFIX = "selfforge-check-"


def leftover_groups() -> list[Path]:
    """Checks' control groups whose selfforge process is gone and that hold no process: a
    run killed (SIGKILL, a lost machine) before it removed them; each holds kernel memory
    until removed. Only groups named with a pid are considered: a group without one (an
    older selfforge's) or with a process in it may belong to a check starting or running
    right now, in a process this one cannot see."""
    found = []
    for parent in sorted(set(_own_cgroups().values())):
        with contextlib.suppress(OSError):
            for d in sorted(parent.glob(f"{GROUP_PREFIX}*")):
                owner, sep, _ = d.name.removeprefix(GROUP_PREFIX).partition("-")
                if sep and owner.isdigit() and not _alive(int(owner)) and not _members(d):
                    found.append(d)
    return found


def remove_leftover_groups(dry_run: bool = False) -> list[Path]:
    """``leftover_groups``, removed (nothing is killed: only an empty group can go); the
    ones removed, or that would be."""
    found = leftover_groups()
    if dry_run:
        return found
    removed = []
    for d in found:
        with contextlib.suppress(OSError):
            d.rmdir()  # refused if a process joined it meanwhile
            removed.append(d)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _members(d: Path) -> list[str]:
    try:
        return (d / "cgroup.procs").read_text().split()
    except OSError:
        return []


def _read_events(path: Path) -> dict[str, int]:
    try:
        pairs = (line.split() for line in path.read_text().splitlines())
        return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}
    except OSError:
        return {}


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def jobs() -> int:
    """How many test suites may run at once: SELFFORGE_JOBS, else the cores."""
    given = os.environ.get("SELFFORGE_JOBS", "").strip()
    if not given:
        return os.cpu_count() or 1
    if not given.isdigit() or int(given) < 1:
        raise UsageError(
            f"SELFFORGE_JOBS={given!r} is not a number of jobs: set it to 1 (one test suite "
            "at a time) or more, or unset it (the machine's cores)"
        )
    return int(given)
