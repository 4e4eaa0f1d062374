"""Test runners beyond pytest and unittest: one small adapter per runner.

Each adapter says how to make its runner report per-test results (flags or environment),
which toolchain folders and variables the sandbox needs for it (``home_needs``: exactly
what of the user's home), how to narrow a run to
some tests, and how to read the outcomes back into the judge's ``TestReport``. Pytest
and unittest stay in ``runner.py`` (pytest reports through the judge's own channel).

Where a runner's results come from its output, code under test that writes to the same
stream can add lines; every adapter therefore keeps the worst outcome a test is given,
and checks the runner's own summary against the per-test lines (a disagreement makes
the results untrusted, like an attacked channel). The README's threat model states the
limit.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from selfforge.judge.results import TestReport

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
        and the interpreter are shown already (``judge/home.py``)."""
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


def detect(
    command: str, tree: Path, explicit: str = "auto", junit_path: str = ""
) -> Adapter | None:
    """The adapter for a test command, or None for pytest/unittest (``runner.py``)."""
    from selfforge.judge.runners import cargo, gotest, junit, node, tap

    junit_file = junit_path
    table: dict[str, type[Adapter]] = {
        "go": gotest.GoTest,
        "cargo": cargo.CargoTest,
        "node": node.NodeTest,
        "tap": tap.Tap,
    }
    if explicit == "junit":
        return junit.JUnit(junit_file)
    if explicit in table:
        return table[explicit]()
    if explicit in ("pytest", "unittest"):
        return None
    # The command, then what it wraps: a Makefile, a justfile, a script it names.
    for text in (f" {command} ", *_wrapped(command, tree)):
        if re.search(r"(^|[\s/])go\s+test\b", text, re.M):
            return gotest.GoTest()
        if re.search(r"(^|[\s/])cargo\s+(\+\S+\s+)?test\b", text, re.M):
            return cargo.CargoTest()
        if re.search(r"(^|[\s/])node\s+(.*\s)?--test\b", text, re.M):
            return node.NodeTest()
    if _npm_runs_node_test(command, tree):
        return node.NodeTest()
    return None


def _wrapped(command: str, tree: Path) -> list[str]:
    """The text of the files a wrapping command runs (Makefile, justfile, a script);
    none for a command that runs Python (pytest's own channel reports through any
    wrapper)."""
    from selfforge.treefiles import NotReadable, read_bytes

    w = words(command)
    if not w or re.search(r"(^|[\s/])(pytest|py\.test|python[\d.]*)(\s|$)", command):
        return []
    names = [x for x in w if "/" in x or "." in x]
    if w[0] in ("make", "gmake"):
        names += ["Makefile", "makefile", "GNUmakefile"]
    elif w[0] == "just":
        names += ["justfile", "Justfile"]
    found = []
    for name in dict.fromkeys(n.removeprefix("./") for n in names):
        try:
            found.append(read_bytes(tree, name, 256 * 1024).decode("utf-8", "replace"))
        except (NotReadable, ValueError, OSError):
            continue
    return found


def _npm_runs_node_test(command: str, tree: Path) -> bool:
    """``npm test`` / ``npm run X`` / ``yarn test`` whose package.json script is node --test."""
    w = words(command)
    if not w or w[0] not in ("npm", "yarn", "pnpm"):
        return False
    script = "test"
    if len(w) >= 3 and w[1] in ("run", "run-script"):
        script = w[2]
    elif len(w) >= 2 and w[1] not in ("test", "t"):
        return False
    scripts = package_scripts(tree)
    return bool(re.search(r"(^|[\s/])node\s+(.*\s)?--test\b", scripts.get(script, "")))


def package_scripts(tree: Path) -> dict[str, str]:
    from selfforge.treefiles import NotReadable, read_text

    try:
        data = json.loads(read_text(tree, "package.json"))
    except (NotReadable, ValueError):
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in scripts.items()} if isinstance(scripts, dict) else {}
