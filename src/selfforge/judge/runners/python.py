"""pytest and unittest: Python's runners. Their results come through selfforge's pytest
plugin and channel (``results.py``, ``channel.py``: whatever starts pytest, a script,
make, nox, tox, reports through it), else from ``unittest -v``'s output; the command runs
this way in ``judge/sandbox/command.py`` (``reports_through_channel``).

A command that starts pytest itself (``python -m pytest``, ``pytest``) lets the judge
narrow a run to some test files and leave files out (the plugin does both), and reruns
the tests whose outcome changed; a wrapped one (``make test``, ``tox``) runs whole.
Which files are tests is pytest's configuration (``repo/testpaths.py``); how pytest runs
(its settings, its plugins) is compared table by table in ``rules/integrity.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.judge.runners.base import Adapter
from selfforge.judge.runners.coverage import Lines, read_python
from selfforge.judge.runners.results import TestReport

if TYPE_CHECKING:
    from selfforge.repo.testpaths import TestRule

_STARTS_PYTEST = re.compile(r"(^|[\s/])(py\.test|pytest)(\s|$)")


def is_pytest(command: str) -> bool:
    """The command starts pytest itself (not through a wrapper)."""
    return _STARTS_PYTEST.search(command) is not None


class PyTest(Adapter):
    """pytest, and what ``auto`` falls back to: any command no other runner claims."""

    name = "pytest"
    language = "python"
    program = ""  # the project's Python (init and doctor find it: repo/detect.py)
    reports_through_channel = True
    missing_module = (r"ModuleNotFoundError: No module named '([\w.]+)'",)
    # Measured by selfforge's plugin with line probes compiled into the changed files
    # (coverage.py, the project's, for a file imported before the plugin): inject/;
    # sandbox/command.py passes the files and folder in its settings, not the environment.
    coverage_tool = "line probes"
    coverage_suffixes = (".py",)
    missing_symbol = (r"cannot import name '(\w+)'", r"has no attribute '(\w+)'")

    def __init__(self, command: str = "") -> None:
        self.direct = is_pytest(command)

    @classmethod
    def make(cls, command: str, junit_path: str) -> Adapter:
        return cls(command)

    @classmethod
    def test_file(cls, path: str, rule: TestRule | None = None) -> bool:
        from selfforge.repo.testpaths import DEFAULT

        return (rule or DEFAULT).is_test_file(path)

    module_files = ("pyproject.toml", "setup.py", "setup.cfg")

    @classmethod
    def is_module(cls, root: Path, folder: str) -> bool:
        """A package (a pyproject.toml, setup.py or setup.cfg) that holds tests of its
        own: a tests/ or test/ folder, or test_*.py beside it."""
        here = root / folder
        return any((here / f).is_file() for f in cls.module_files) and _has_tests(here)

    @classmethod
    def module_command(cls, command: str) -> str:
        """The test command itself when it starts pytest or unittest; a wrapper's
        (``make test``, tox, nox) is the root's own: plain pytest instead."""
        if is_pytest(command) or re.search(r"\s-m\s+(pytest|unittest)\b", f" {command} "):
            return command
        return "python -m pytest -q"

    def can_select(self) -> bool:
        return self.direct

    def reruns(self) -> bool:
        return self.direct

    def can_ignore(self) -> bool:
        return self.direct

    def repeats(self) -> bool:
        return self.direct

    def parse(self, output: str, tree: Path) -> TestReport | None:
        return None  # the channel's report, else unittest's output (sandbox/command.py)

    def read_coverage(self, out_dir: Path, files: list[str], tree: Path) -> Lines | None:
        return read_python(out_dir, tree, files)

    # A run read from unittest's output (`make test` whose recipe runs it, or unittest
    # itself): pytest never started, so neither selfforge's plugin nor its probes did.
    def caveat(self, report: TestReport) -> str:
        return _UNITTEST_CAVEAT if report.from_output else ""

    def unmeasured(self, report: TestReport) -> str:
        return _UNITTEST_UNMEASURED if report.from_output else ""


_UNITTEST_CAVEAT = (
    "it runs unittest: selfforge reads its outcomes from the output, so it cannot pick tests "
    "to run (a rerun, or a mutant that shows a new test can fail, runs the whole suite) nor "
    "measure which changed lines the tests run; with pytest installed, "
    '[checks] test = "python -m pytest -q" runs the same suite with both'
)
_UNITTEST_UNMEASURED = (
    "the tests ran under unittest, and selfforge measures Python through its pytest plugin "
    "(a test command of `python -m pytest` runs unittest suites too)"
)


def _has_tests(folder: Path) -> bool:
    if (folder / "tests").is_dir() or (folder / "test").is_dir():
        return True
    return any(folder.glob("test_*.py")) or any(folder.glob("*_test.py"))


class Unittest(PyTest):
    name = "unittest"
    coverage_tool = ""
    coverage_absent = (
        "not measured for unittest (selfforge's coverage runs in its pytest plugin: "
        "pytest runs unittest suites too)"
    )
    no_tests = (
        (
            r"^(Ran 0 tests\b.*)$",
            "unittest runs the TestCase classes of modules named test*.py under the folder "
            "it starts in (-s DIR names another, -p PATTERN other names)",
        ),
    )
