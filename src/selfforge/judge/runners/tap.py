"""TAP (the Test Anything Protocol, versions 12-14), for any runner that prints it:
``[checks] runner = "tap"``. Nested subtests are named by their parents
(``suite > test``); ``# SKIP`` is skipped, ``# TODO`` is an expected failure. The plan
(``1..N``) must match the top-level results, or the run did not finish.
"""

from __future__ import annotations

import re
from pathlib import Path

from selfforge.judge.runners.base import Adapter, Found, add, package_scripts
from selfforge.judge.runners.results import TestReport

_RESULT = re.compile(r"^(?P<indent>\s*)(?P<ok>not ok|ok)\b\s*(?P<n>\d+)?\s*-?\s*(?P<rest>.*)$")
_PLAN = re.compile(r"^(?P<indent>\s*)1\.\.(?P<n>\d+)")
_SUBTEST = re.compile(r"^(?P<indent>\s*)# Subtest: (?P<name>.*)$")
_BAIL = re.compile(r"^\s*Bail out!", re.M)


class Tap(Adapter):
    name = "tap"
    language = ""
    trust_note = (
        "per-test results are read from the test output, which the code under test can "
        "also write to; they must agree with the exit code and the plan, but a test that "
        "forges both is not caught"
    )

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        """A package.json test script no other runner claims, read as TAP."""
        script = package_scripts(root).get("test", "") if (root / "package.json").is_file() else ""
        if script and "no test specified" not in script:
            source = "package.json's test script (read as TAP)"
            return Found("tap", "npm test", source, results="tap")
        return None

    def parse(self, output: str, tree: Path) -> TestReport | None:
        return parse_tap(output)


def parse_tap(output: str) -> TestReport | None:
    report = TestReport(started=False, finished=False)
    parents: dict[int, str] = {}  # indent -> the subtest announced there
    top, plan = 0, None
    rows: list[tuple[int, str, str, str]] = []
    for line in output.splitlines():
        if m := _SUBTEST.match(line):
            level = len(m["indent"])
            parents = {i: n for i, n in parents.items() if i < level}
            parents[level] = m["name"].strip()
            continue
        if m := _PLAN.match(line):
            report.started = True
            if not m["indent"]:
                plan = int(m["n"])
            continue
        m = _RESULT.match(line)
        if m is None:
            continue
        report.started = True
        indent = len(m["indent"])
        name, _, directive = m["rest"].partition(" # ")
        name = name.strip() or f"test {m['n'] or len(rows) + 1}"
        path = [parents[i] for i in sorted(parents) if i < indent] + [name]
        rows.append((indent, " > ".join(path), m["ok"], directive.strip().upper()))
        top += not indent
    suites = {" > ".join(r[1].split(" > ")[:-1]) for r in rows if r[0]}
    for _, test_id, ok, directive in rows:
        if test_id in suites:
            continue  # a suite's line: its tests speak for it
        if directive.startswith("SKIP"):
            outcome = "skipped"
        elif directive.startswith("TODO"):
            outcome = "xfailed" if ok == "not ok" else "xpassed"
        else:
            outcome = "passed" if ok == "ok" else "failed"
        add(report, test_id, outcome)
    report.finished = plan is not None and plan == top and not _BAIL.search(output)
    return report if report.started else None
