"""Code no test runs: which lines a change adds or modifies, and how many of them the
tests executed (issue 41, point 3).

The lines counted are the added or modified lines (``git diff -U0 base..commit``) of the
change's code files that the runner measures (not its test files, by the runner's own
rule), and among those only the lines the coverage tool counts as executable (blank
and comment lines are the tool's to leave out; a line that only declares, a ``def`` or
``func`` header, is left out here: Python runs it on import whether or not anything
calls the function). They are measured in one run, the full run of the change's own
suite: ``tests`` when the change leaves the tests alone, else ``tests:new`` (its tests,
new ones in), never the judging run of the base's tests beside it (a tracer costs; the
suites differ only by the change's tests). The runners measure (line probes, or coverage.py,
through selfforge's pytest plugin, ``go test -coverprofile``, Node's V8 coverage; Rust,
unittest, Bun and JUnit-read runners: not measured, said); ``runners/coverage.py``
reads what they wrote.

What it decides: none of N > 0 changed executable lines executed by any test is
**needs review** in ``check`` ("no test runs the changed code: path:lines"); in ``run``
(a model's proposal) it is a note in the tests step, not a refusal: whether a proposal
needs a test is the task's criterion (``criterion.py``), and refusing here would turn
every task that adds untested glue into repair rounds. A measure that failed or was not
possible is said ("not measured: why") and changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from selfforge.repo import git
from selfforge.repo.testpaths import DEFAULT

if TYPE_CHECKING:
    from selfforge.judge.runners.base import Adapter
    from selfforge.judge.runners.coverage import Lines
    from selfforge.judge.runners.results import TestReport
    from selfforge.judge.stage_log import Recorder
    from selfforge.repo.testpaths import TestRule

NO_TEST_RUNS = "no test runs the changed code"
MAX_FILES = 200  # a change this wide is measured on its first files only
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


def changed_lines(tree: Path, base: str, commit: str, files: list[str]) -> dict[str, set[int]]:
    """The lines of ``files`` that ``commit`` adds or modifies over ``base``."""
    if not files:
        return {}
    out = git.diff(tree, "-U0", "--no-renames", base, commit, "--", *files)
    lines: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in out.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = lines.setdefault(name[2:], set()) if name.startswith("b/") else None
        elif line.startswith("@@") and current is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or "1")
            current.update(range(start, start + count))
    return {path: found for path, found in lines.items() if found}


def code_files(
    tree: Path, base: str, commit: str, adapter: Adapter, rule: TestRule | None
) -> list[str]:
    """The change's code files of the runner's language (added or modified, not its test
    code: test files, conftest.py, what lives in a test folder): what its runs measure."""
    if not adapter.coverage_suffixes:
        return []
    found = [
        p
        for p, status in git.name_status(tree, base, commit).items()
        if status in ("A", "M")
        and PurePosixPath(p).suffix in adapter.coverage_suffixes
        and not adapter.test_file(p, rule)
        and not (rule or DEFAULT).is_test_path(p)  # conftest.py, helpers in test folders
        and adapter.measures(p, tree)  # not a nested Go module's: another suite runs it
    ]
    return sorted(found)[:MAX_FILES]


@dataclass
class Coverage:
    """The changed code's executable lines and those the tests ran, or why not measured."""

    tool: str
    changed: dict[str, set[int]] = field(default_factory=dict)  # executable changed lines
    run: dict[str, set[int]] = field(default_factory=dict)
    note: str = ""  # not measured: why
    # files the tool never saw, where the runner tells why (a Go build constraint)
    unbuilt: dict[str, str] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return not self.note

    @property
    def changed_count(self) -> int:
        return sum(len(v) for v in self.changed.values())

    @property
    def run_count(self) -> int:
        return sum(len(v) for v in self.run.values())

    @property
    def none_run(self) -> bool:
        return self.measured and self.changed_count > 0 and self.run_count == 0

    def text(self) -> str:
        """What the tests step says."""
        if not self.measured:
            return f"coverage: {self.note}"
        n, m = self.changed_count, self.run_count
        return f"coverage: {m}/{n} changed lines run by the tests ({self.tool})"

    def unrun(self) -> str:
        """The changed lines no test ran, as ``path:1-3,7``."""
        parts = []
        for path in sorted(self.changed):
            left = sorted(self.changed[path] - self.run.get(path, set()))
            if left:
                why = f" ({self.unbuilt[path]})" if path in self.unbuilt else ""
                parts.append(f"{path}:{_spans(left)}{why}")
        return ", ".join(parts[:10]) + (" …" if len(parts) > 10 else "")

    def to_json(self) -> dict[str, object]:
        if not self.measured:
            return {"measured": False, "tool": self.tool or None, "note": self.note}
        return {
            "measured": True,
            "tool": self.tool,
            "changed_lines": self.changed_count,
            "run": self.run_count,
            "not_run": {
                p: sorted(v - self.run.get(p, set())) for p, v in sorted(self.changed.items())
            },
        }


def assess(
    adapter: Adapter, tree: Path, lines: dict[str, set[int]], measured: list[Lines | None]
) -> Coverage | None:
    """The coverage of the changed ``lines`` from the runs' ``measured`` lines (None: no
    changed code of the runner's language, nothing to say). A file the tool never saw
    (no test binary linked its Go package) counts its non-blank, non-comment changed
    lines, none of them run."""
    if not lines:
        return None
    tool = adapter.coverage_tool
    if not tool:
        return Coverage("", note=adapter.coverage_absent)
    runs = [m for m in measured if m is not None]
    notes = [m.note for m in runs if m.note]
    runs = [m for m in runs if not m.note]
    if not runs:
        note = notes[0] if notes else "the test run wrote no coverage (see the tests' output)"
        return Coverage(tool, note="not measured: " + note.removeprefix("not measured: "))
    merged = runs[0]
    for other in runs[1:]:
        merged = merged.merge(other)
    cov = Coverage(runs[0].tool)
    for path, changed in lines.items():
        seen = merged.executable.get(path)
        changed = _not_declarations(tree / path, changed)
        executable = changed & seen if seen is not None else _code_only(tree / path, changed)
        if executable:
            cov.changed[path] = executable
            cov.run[path] = executable & merged.executed.get(path, set())
            if seen is None and (why := adapter.not_built(tree / path)):
                cov.unbuilt[path] = why
    return cov


@dataclass(frozen=True)
class Change:
    """The change whose code lines are measured: ``commit`` over ``base`` on ``tree``."""

    tree: Path
    base: str
    commit: str
    rule: TestRule | None = None
    person: bool = False  # a person's check (needs review), not a model's proposal


def coverage_step(
    change: Change, adapter: Adapter, reports: list[TestReport | None], record: Recorder
) -> tuple[Coverage | None, list[str]]:
    """Journal the ``tests:coverage`` step for a change whose tests passed; the
    coverage, and what a person must look at (a person's check: no test runs any of the
    changed code). A model's proposal gets the step's note only."""
    tree, base, commit = change.tree, change.base, change.commit
    files = code_files(tree, base, commit, adapter, change.rule)
    lines = changed_lines(tree, base, commit, files)
    cov = assess(adapter, tree, lines, [r.coverage for r in reports if r is not None])
    if cov is None:
        return None, []
    if not cov.none_run:
        record.step("tests:coverage", True, cov.text())
        return cov, []
    item = f"{NO_TEST_RUNS}: {cov.unrun()}"
    said = "needs review" if change.person else "note"  # a proposal is not refused for it
    record.step("tests:coverage", True, f"{cov.text()}; {said}: {item}")
    return cov, [item] if change.person else []


_COMMENT = ("#", "//", "/*", "*")
# A line that only declares: a Python def/class header or decorator (run when the module
# is imported, whether or not anything calls it), a Go func or type line, a JavaScript
# function or class header. What runs is the body.
_DECLARATION = re.compile(
    r"^\s*(@|(async\s+)?def\s|class\s|func\s|type\s|"
    r"(export\s+)?(default\s+)?(async\s+)?function\b|(export\s+)?(default\s+)?class\s)"
)


def _not_declarations(path: Path, lines: set[int]) -> set[int]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return lines
    return {n for n in lines if not (0 < n <= len(text) and _DECLARATION.match(text[n - 1]))}


def _code_only(path: Path, lines: set[int]) -> set[int]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return set()
    return {
        n
        for n in lines
        if 0 < n <= len(text)
        and text[n - 1].strip()
        and not text[n - 1].lstrip().startswith(_COMMENT)
    }


def _spans(lines: list[int]) -> str:
    spans: list[str] = []
    start = prev = lines[0]
    for n in [*lines[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(spans)
