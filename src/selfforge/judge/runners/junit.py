"""JUnit XML, the report most runners can write (Jest through jest-junit, Vitest's
``--reporter=junit``, Mocha's ``xunit``, Maven, ctest...): ``[checks] runner = "junit"``
with ``[checks] junit = "FILE"``, the file the test command writes in the tree. It is
read size-bounded, without following links, before the tree is restored.

Test ids are ``<file or classname>::<name>``. A file the command did not write, or one
that does not parse, is no report: the run stops at the baseline with the fix.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from selfforge.errors import ConfigError
from selfforge.judge.runners.base import Adapter, Found, add
from selfforge.judge.runners.results import TestReport

MAX_BYTES = 32 * 2**20


class JUnit(Adapter):
    name = "junit"
    language = ""
    trust_note = (
        "per-test results come from a report file the code under test could also write; "
        "they must agree with the exit code, but a test that forges both is not caught "
        "(prefer go test, cargo test, node --test or pytest, which selfforge reads itself)"
    )

    def __init__(self, report_file: str = "") -> None:
        self.report_file = report_file

    @classmethod
    def make(cls, command: str, junit_path: str) -> Adapter:
        if not junit_path:
            raise ConfigError(
                f'[checks] runner = "{cls.name}" needs junit = "FILE", the JUnit XML report '
                "the test command writes (e.g. junit.xml)"
            )
        return cls(junit_path)

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        """Vitest, Mocha, or Jest with jest-junit in package.json, writing JUnit XML."""
        package = _package(root)
        deps = {**(package.get("devDependencies") or {}), **(package.get("dependencies") or {})}
        scripts = package.get("scripts") or {}
        script = str(scripts.get("test", "")) if isinstance(scripts, dict) else ""
        out = JUNIT_FILE
        if "vitest" in deps:  # its results cache would go into node_modules, read-only here
            command = f"npx vitest run --no-cache --reporter=junit --outputFile={out}"
            return Found("junit", command, "vitest in package.json", out, results="junit")
        if "mocha" in deps:
            reporter = f"--reporter xunit --reporter-options output={out}"
            command = f"npx mocha{_mocha_args(script)} {reporter}"
            return Found("junit", command, "mocha in package.json", out, results="junit")
        if "jest" in deps and "jest-junit" in deps:
            command = f"JEST_JUNIT_OUTPUT_FILE={out} npx jest --ci --reporters=jest-junit"
            source = "jest and jest-junit in package.json"
            return Found("junit", command, source, out, results="junit")
        return None

    def parse(self, output: str, tree: Path) -> TestReport | None:
        from selfforge.repo.treefiles import NotReadable, read_bytes

        if not self.report_file:
            return None
        try:
            data = read_bytes(tree, self.report_file, MAX_BYTES + 1)
        except NotReadable:
            return None
        if len(data) > MAX_BYTES:
            report = TestReport()
            report.channel_problem = f"{self.report_file} is larger than {MAX_BYTES >> 20} MiB"
            return report
        return parse_junit(data, tree)


def parse_junit(data: bytes, tree: Path | None = None) -> TestReport | None:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return None  # no entity expansion from a file the candidate's code could write
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return None
    report = TestReport()
    for case in root.iter("testcase"):
        test_id = _test_id(case, tree)
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = child.get("message") or (child.text or "")
                break
            if child.tag == "skipped":
                outcome = "skipped"
        try:
            secs = max(0.0, min(float(case.get("time") or 0), 1e7))
        except ValueError:
            secs = 0.0
        add(report, test_id, outcome, message, secs)
    return report if report.outcomes else None


def _test_id(case: ElementTree.Element, tree: Path | None) -> str:
    """``file::suite > name`` (Mocha: file, suite as classname), ``classname::name``
    (Vitest: the file as classname, the suites in the name), ``classname::name`` else."""
    file, classname, name = case.get("file"), case.get("classname") or "", case.get("name", "")
    if file and tree is not None and Path(file).is_absolute():
        with contextlib.suppress(ValueError, OSError):
            file = Path(file).resolve().relative_to(tree.resolve()).as_posix()
    if file and classname and classname != file:
        return f"{file}::{classname} > {name}"
    return f"{file or classname}::{name}"


JUNIT_FILE = ".selfforge-junit.xml"  # the report file the commands init writes name


def _package(root: Path) -> dict:
    """The checkout's package.json, or {} (none, unreadable, not an object)."""
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return package if isinstance(package, dict) else {}


_REPORTER_FLAG = re.compile(r"^(--reporter|-R|--reporter-options?|-O)$")
# What would stop mocha at the first failure (every test's outcome is wanted) or keep it
# running: dropped.
_DROPPED = {"--bail", "-b", "--watch", "-w", "--"}


def _mocha_args(script: str) -> str:
    """The test script's own arguments to mocha (its interface, its files), without its
    reporter, which selfforge replaces, and ``--bail`` (every test's outcome is wanted):
    ``mocha --ui qunit --reporter spec --bail test/`` gives `` --ui qunit test/``."""
    m = re.search(r"(?:^|[\s/])(?:_?mocha)\s+([^&|;]*)", script)
    if m is None:
        return ""
    words, kept, skip = shlex.split(m.group(1)), [], False
    for word in words:
        if skip:
            skip = False
        elif _REPORTER_FLAG.match(word):
            skip = True
        elif word in _DROPPED:
            continue
        elif not word.startswith(("--reporter=", "--reporter-option")):
            kept.append(word)
    return "".join(" " + shlex.quote(w) for w in kept)
