"""What every test-runner adapter is built on: the ``Adapter`` class, a ``Prepared``
command, ``Found`` (what ``init`` finds), ``add`` (a test reported twice keeps its worst
outcome), and the small readers they share (a command's words, package.json's scripts).

An adapter declares everything the rest of selfforge asks about its runner: how a command
is recognised as running it, which files it runs as tests, its configuration files, the
added lines that skip or focus a test, what it says when a module is missing, what makes
it unrunnable and the fix, the program and the parts of home it needs, and how ``init``
finds it. The registry (``registry.py``) folds these answers; nothing else spells a
runner's name."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.judge.runners.coverage import Lines
from selfforge.judge.runners.results import OUTCOME_RANK, TestReport
from selfforge.repo.treefiles import NotReadable, read_text

if TYPE_CHECKING:
    from selfforge.repo.testpaths import TestRule


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


@dataclass(frozen=True)
class Found:
    """A test command ``init`` found for a runner, from the project's files."""

    runner: str  # the adapter's name
    test: str
    source: str  # where it came from, in words
    junit: str | None = None
    lint: str | None = None
    results: str = "auto"  # [checks] runner: who reads the per-test results


@dataclass(frozen=True)
class Module:
    """A nested module or workspace member: a folder below the root with a project of its
    own (a ``go.mod``, a crate, a workspace package, a Python package with its tests),
    and the test command its suite runs with there as the working directory."""

    dir: str  # repo-relative, posix, never "."
    runner: str  # the adapter's name
    command: str  # run with ``dir`` as the working directory
    # who runs its suite already: "" (nobody: it gets a suite run of its own), else why
    # the test command itself runs it (a workspace member, tests the base's run reached)
    covered: str = ""


# Folders never searched for nested modules: environments, caches, vendored code, a
# runner's fixtures.
SKIPPED_FOLDERS = frozenset(
    {"node_modules", "vendor", "target", "testdata", "__pycache__", "venv", "build", "dist"}
)
MODULE_DEPTH = 4  # how deep below the root a module's manifest is looked for


def manifest_dirs(root: Path, names: tuple[str, ...], depth: int = MODULE_DEPTH) -> list[str]:
    """The folders below ``root`` (not the root itself; repo-relative, posix, sorted)
    that hold one of the files ``names``: hidden folders, environments and vendored code
    left out."""
    found: list[str] = []
    top = len(root.parts)
    for here, dirs, files in os.walk(root):
        level = len(Path(here).parts) - top
        dirs[:] = (
            sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
            if level < depth
            else []
        )
        if level and any(n in files for n in names):
            found.append(Path(here).relative_to(root).as_posix())
    return sorted(found)


def skipped_folder(folder: str) -> bool:
    """A folder no module is looked for in (hidden, an environment, vendored code)."""
    return any(p.startswith(".") or p in SKIPPED_FOLDERS for p in folder.split("/"))


def matches_globs(folder: str, globs: list[str]) -> bool:
    """Whether ``folder`` is one a workspace's member globs (``packages/*``) name."""
    return any(fnmatch.fnmatchcase(folder, g.removeprefix("./").strip("/")) for g in globs)


class Adapter:
    """One test runner. Subclasses override what their runner needs; the class
    attributes are facts about the runner, read by the registry without an instance."""

    name = ""
    language = ""
    inject_dir = ""  # where selfforge's reporter files are, as the check sees them
    # a flaky rerun's tests the run itself runs again (set on the run's copy where
    # repeats()): test id -> (times at most, the outcome it had)
    repeat: dict[str, tuple[int, str]] | None = None
    # Said on every run where the runner's results can be forged by the code under test
    # beyond what the exit-code and summary checks catch (the README's threat model).
    trust_note = ""
    # A command (or the Makefile, justfile or script it runs) that runs this runner: a
    # regex searched in " command " (None: only ``[checks] runner`` names it).
    command_pattern: str | None = None
    # The program the runner needs on PATH (doctor checks it; "" for none of its own).
    program = ""
    # Files that decide how the tests run (globs on the name or the path's end): the
    # judge's, never a model's change.
    config_files: tuple[str, ...] = ()
    # Added diff lines (``+...``) that skip, focus or neuter a test, and the files whose
    # diffs are read for them (by suffix).
    weakening: str | None = None
    weakening_suffixes: tuple[str, ...] = ()
    # Whether its tests live in the code's own files (Rust's unit tests): the marks are
    # read in every such file, and ``removed_test`` (removed diff lines ``-...`` that take a
    # test out, the test's mark first) too.
    tests_in_sources = False
    removed_test: str | None = None
    # Added lines in one of its test files that take over how the tests run, and what to
    # call them (Go's TestMain): test infrastructure, not a test.
    harness: tuple[str, str] | None = None
    # What the runner says when a module is not installed, the module's name first.
    missing_module: tuple[str, ...] = ()
    # A build error of a test file, in the toolchain's words (its first line), and the
    # name such an error is about, first group (judge/behaviour_change.py: an API change).
    build_error: str | None = None
    missing_symbol: tuple[str, ...] = ()
    # What the runner says when its toolchain or tool did not start, and the fix ({0}:
    # the pattern's first group); and when it ran and found no test, and where it looks.
    unrunnable: tuple[tuple[str, str], ...] = ()
    no_tests: tuple[tuple[str, str], ...] = ()
    # Whether results come through selfforge's pytest plugin and channel (Python).
    reports_through_channel = False
    # Whether the lint runs beside the tests, in a checkout of its own (two jobs): a
    # runner whose suite is slow to build and whose lint reads no test output (go vet).
    lint_beside_tests = False
    # Line coverage of the changed code (judge/coverage.py): the tool that measures it
    # and the code files it measures (by suffix); none, and why, where it is not measured.
    coverage_tool = ""
    coverage_suffixes: tuple[str, ...] = ()
    coverage_absent = "not measured for this test runner"

    @classmethod
    def make(cls, command: str, junit_path: str) -> Adapter:
        """The adapter for this test command (``junit_path``: ``[checks] junit``)."""
        return cls()

    @classmethod
    def test_file(cls, path: str, rule: TestRule | None = None) -> bool:
        """A file this runner runs as tests (not a helper they use); ``rule``: the
        project's pytest configuration, where the runner's own convention needs it."""
        return False

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        """The test command ``init`` writes for this runner, from the project's files."""
        return None

    # The files that mark a folder as a nested module of this runner's language (a
    # go.mod, a Cargo.toml, a package.json, a pyproject.toml): is_module says which are.
    module_files: tuple[str, ...] = ()

    @classmethod
    def is_module(cls, root: Path, folder: str) -> bool:
        """Whether ``folder`` (repo-relative, not the root) is a nested module whose test
        suite the root's command may not run."""
        return False

    @classmethod
    def modules(cls, root: Path) -> list[str]:
        """The nested modules of this runner's language below ``root`` (folders,
        repo-relative), found by their files within ``MODULE_DEPTH`` levels."""
        if not cls.module_files:
            return []
        return [d for d in manifest_dirs(root, cls.module_files) if cls.is_module(root, d)]

    @classmethod
    def module_command(cls, command: str) -> str:
        """The test command a nested module's suite runs with, in its folder: the
        runner's own per-module form, or the root's ``command`` itself."""
        return command

    @classmethod
    def covers_module(cls, command: str, root: Path, folder: str) -> bool | None:
        """Whether ``command`` run at the root runs ``folder``'s suite too (a workspace
        member): True or False when the project's files tell; None: told by which tests
        the base's run reported."""
        return None

    @classmethod
    def runs(cls, text: str) -> bool:
        """Whether ``text`` (a command, or a file a command runs) runs this runner."""
        return cls.command_pattern is not None and bool(re.search(cls.command_pattern, text, re.M))

    def reruns(self) -> bool:
        """Whether a test whose outcome changed is rerun to tell a flaky one."""
        return True

    def can_ignore(self) -> bool:
        """Whether the run can leave a file out without deleting it (pytest's plugin)."""
        return False

    def repeats(self) -> bool:
        """Whether one run can rerun a test several times itself (pytest's plugin, until
        its outcome changes; go test's -count): a flaky rerun then costs one start-up (one
        build), not one a time. The report says how often each ran (``runs``)."""
        return False

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

    def coverage_env(self, out_dir: str, files: list[str], tree: Path) -> dict[str, str]:
        """What the run's environment gets so that it writes the coverage of ``files``
        (repo-relative) into ``out_dir`` (as the run sees it); merged into ``prepare``'s."""
        return {}

    def coverage_files(self) -> dict[str, str]:
        """Programs the coverage run calls (``coverage_env`` names them): name -> text,
        written executable into the run's coverage folder before it starts."""
        return {}

    def measures(self, path: str, tree: Path) -> bool:
        """Whether this run's coverage can see ``path`` (a code file of the change)."""
        return True

    def read_coverage(self, out_dir: Path, files: list[str], tree: Path) -> Lines | None:
        """What the run wrote into ``out_dir``, per file of ``files``; None: nothing
        readable (not measured)."""
        return None

    def not_built(self, path: Path) -> str:
        """Why a changed file the coverage tool never saw is not built here at all (Go's
        build constraints), "" when the runner has no such reason."""
        return ""

    def caveat(self, report: TestReport) -> str:
        """What the judge cannot do with a command whose run reported ``report``, and
        what would ("": nothing to say), for ``init`` to print under the command."""
        return ""

    def unmeasured(self, report: TestReport) -> str:
        """Why a run that reported ``report`` measured nothing, where the runner can tell
        ("": coverage's general note, "the test run wrote no coverage")."""
        return ""

    def owner(self, test_id: str, tree: Path) -> str | None:
        """The repo-relative file or folder that holds a test, for the focused first
        pass over the tests a change reaches (None: unknown, the test is not chosen)."""
        return None


def add(report: TestReport, test: str, outcome: str, message: str = "", secs: float = 0.0) -> None:
    """Record an outcome; a test reported twice keeps its worst (a forged pass line
    cannot hide a real failure)."""
    previous = report.outcomes.get(test)
    if previous is None or OUTCOME_RANK.get(outcome, 4) >= OUTCOME_RANK.get(previous, 4):
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
