"""What every test-runner adapter is built on: the ``Adapter`` class, a ``Prepared``
command, ``add`` (a test reported twice keeps its worst outcome), and the small readers
they share (a command's words, package.json's scripts)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from selfforge.judge.runners.results import TestReport
from selfforge.repo.treefiles import NotReadable, read_text

RUNNER_NAMES = ("auto", "pytest", "unittest", "go", "cargo", "node", "tap", "junit")
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}


@dataclass(frozen=True)
class Prepared:
    """A test command made ready for one runner: what to run, with which environment,
    and which folders outside the tree the sandbox must show (read-only)."""

    command: str
    env: dict[str, str]
    readable: tuple[Path, ...] = ()
    # The least output the runner's machine-readable stream needs (go test -json writes
    # several events per test: a large suite passes 1 MB); the limit stays a bound.
    output_kb: int = 0


class Adapter:
    """One test runner. Subclasses override what their runner needs."""

    name = ""
    language = ""
    inject_dir = ""  # where selfforge's reporter files are, as the check sees them
    # Said on every run where the runner's results can be forged by the code under test
    # beyond what the exit-code and summary checks catch (the README's threat model).
    trust_note = ""

    def prepare(self, command: str, only: list[str] | None, scratch: str) -> Prepared:
        """``scratch``: a writable folder for caches (inside the sandbox's /tmp)."""
        return Prepared(command, {})

    def parse(self, output: str, tree: Path) -> TestReport | None:
        raise NotImplementedError

    def home_needs(self) -> tuple[Path, ...]:
        """What of the user's home this runner needs shown, read-only, each by its exact
        folder or file (nothing else of home is visible to a check): the PATH entries
        and the interpreter are shown already (``judge/sandbox/home.py``)."""
        return ()

    def can_select(self) -> bool:
        return False

    def owner(self, test_id: str, tree: Path) -> str | None:
        """The repo-relative file or folder that holds a test, for the focused first
        pass over the tests a change reaches (None: unknown, the test is not chosen)."""
        return None


def add(report: TestReport, test: str, outcome: str, message: str = "", secs: float = 0.0) -> None:
    """Record an outcome; a test reported twice keeps its worst (a forged pass line
    cannot hide a real failure)."""
    previous = report.outcomes.get(test)
    if previous is None or _RANK.get(outcome, 4) >= _RANK.get(previous, 4):
        report.outcomes[test] = outcome
    if message:
        report.messages[test] = message.strip().splitlines()[0][:500] if message.strip() else ""
    report.durations[test] = report.durations.get(test, 0.0) + secs


def words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def package_scripts(tree: Path) -> dict[str, str]:
    try:
        data = json.loads(read_text(tree, "package.json"))
    except (NotReadable, ValueError):
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in scripts.items()} if isinstance(scripts, dict) else {}
