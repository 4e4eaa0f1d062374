"""The check space: how check commands run for one repository (the sandbox, its limits,
what every check sees or does not), as one frozen value that runner.py, policy.py and
buildcache.py read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.judge.sandbox.limits import Limits

if TYPE_CHECKING:
    from selfforge.judge.runners.base import Adapter


@dataclass(frozen=True)
class CheckSpace:
    """How check commands run for one repository: the sandbox and its limits."""

    repo: Path  # the user's checkout: hidden from every check
    git_common_dir: Path | None = None
    mode: str = "bwrap"  # or "off", only by the user's explicit choice
    network: bool = False
    limits: Limits = field(default_factory=Limits)
    output_kb: int = 1024
    tmp_mb: int = 1024
    disk_mb: int = 2048
    env_names: tuple[str, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()  # more places no check sees (over readable and toolchains)
    runner: str = "auto"  # [checks] runner: which test runner reads the results
    junit: str = ""  # [checks] junit: the JUnit XML file the test command writes
    # the test command's runner, detected once for the run or check (registry.detect) and
    # carried to every stage; None: detected where a test command runs
    adapter: Adapter | None = field(default=None, repr=False, compare=False)
    # [checks] setup's products: (host path, path in the tree), shown read-only in every
    # check's tree, and the variables pointing at them ("{tree}" is the check's tree)
    provided: tuple[tuple[str, str], ...] = ()
    provided_env: tuple[tuple[str, str], ...] = ()
    # a run of a trusted commit (the baseline's): the only kind that writes the
    # repository's build caches (buildcache.py); every other check sees a copy
    trusted: bool = False

    @property
    def sandboxed(self) -> bool:
        return self.mode != "off"
