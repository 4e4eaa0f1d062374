"""Coverage goals count only tests that can fail (issue 42, point 7).

A goal judged by a ``coverage`` measure is a goal to have the code *checked*, not merely
run. So besides the measure's own figure, the candidate's coverage is counted again with
credit: over the project's code (test files left out on both sides: a test covering its
own lines proves nothing), a line the candidate's tests run counts as covered only when

- the base's tests ran it too (its line in the base, carried through the diff), or
- it lies in a stretch of newly covered lines (statements next to each other in the
  file, such as a function's body) one of whose mutants makes a test the candidate adds
  fail (judge/new_tests.AddedTestsProver: the mutants of judge/mutants.py, run as the
  new-tests stage runs them).

A test that calls a function and asserts nothing kills no mutant of it: its lines earn
nothing, the credited coverage is the base's, and the goal's measure is ``unchanged``
(``NAME[credited]`` in the figures and the reason). This reads coverage.py's report
(Python); for another language's coverage the credit is not computed, and the stage
that every added test must fail on the base or a mutant stands alone.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from selfforge.config import Directives, Measure
from selfforge.errors import GitError
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.sandbox.command import anchor_command
from selfforge.measure import kinds, stats
from selfforge.measure.sample import Comparison, MeasureError, Side, run_on
from selfforge.repo import git

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


class Prover(Protocol):
    """What the judge answers about the tests a candidate adds (``added``: their ids)."""

    added: list[str]

    def is_test(self, path: str) -> bool: ...

    def checked(self, units: list[tuple[str, list[int]]]) -> list[bool]: ...


@dataclass
class Lines:
    """coverage.py's report of one run: per file, its statements and those that ran."""

    statements: dict[str, list[int]]
    ran: dict[str, set[int]]
    percent: float  # coverage.py's own figure: the measure's value
    seconds: float  # the run's wall time


_BASES: dict[tuple[str, str, str, str], Lines] = {}  # a base's coverage, for repairs


@dataclass
class Credit:
    """A coverage goal's two figures from the same runs: the measure's (coverage.py's
    total) and the credited one; and a line saying what was credited."""

    measured: Comparison
    credited: Comparison
    note: str


def credited(
    m: Measure,
    d: Directives,
    base: Side,
    candidate: Side,
    space: CheckSpace,
    prover: Prover,
    root: Path,
) -> Credit | None:
    """The measure on both sides (one run each: coverage is steady) and the coverage of
    the code, the candidate's with credit only for lines its added tests are shown to
    check. None: not coverage.py's report (no credit computed)."""
    # a base's coverage is steady: run once per commit, measure and command (a resident
    # selfforge keeps this between commands: the key holds all that the run depends on)
    key = (base.commit, m.model_dump_json(), str(kinds.default_command(m, d)), str(root))
    a = _BASES[key] if key in _BASES else _lines(m, d, base, space, root)
    if a is None:
        return None
    b = _lines(m, d, candidate, space, root)
    if b is None:
        return None
    _BASES[key] = a
    code = [p for p in b.statements if _ours(p) and not prover.is_test(p)]
    base_code = [p for p in a.statements if _ours(p) and not prover.is_test(p)]
    units: list[tuple[str, list[int]]] = []
    covered = 0
    for path in code:
        before = _carried(a.ran.get(path, set()), _diff(base, candidate, path))
        new = sorted(b.ran[path] - before)
        covered += len(b.ran[path]) - len(new)
        units += [(path, run) for run in _stretches(b.statements[path], set(new))]
    measured = _comparison(m, m.name, kinds.unit_of(m), a.percent, b.percent)
    measured.seconds = a.seconds + b.seconds
    # no gain to credit: no mutant is run
    proven = prover.checked(units) if measured.verdict == stats.IMPROVED else [False] * len(units)
    gained = sum(len(lines) for (_, lines), ok in zip(units, proven, strict=True) if ok)
    new_lines = sum(len(lines) for _, lines in units)
    base_value = _percent(sum(len(a.ran[p]) for p in base_code), a, base_code)
    # deleting code no test ran earns nothing: the code's size never shrinks for the credit
    total = max(_total(a, base_code), _total(b, code))
    value = 100.0 * (covered + gained) / total if total else 0.0
    note = (
        f"coverage credit: {gained} of {new_lines} newly covered line(s) of the code are "
        "checked by the added tests (a mutant of them makes an added test fail)"
    )
    if new_lines > gained:
        left = [f"{p}:{_span(lines)}" for (p, lines), ok in zip(units, proven, strict=True)]
        left = [w for w, ok in zip(left, proven, strict=True) if not ok]
        note += f"; not credited: {', '.join(left[:5])} (run by a test, checked by none)"
    comparison = _comparison(m, f"{m.name}[credited]", "% of the code", base_value, value)
    return Credit(measured, comparison, note)


def _comparison(m: Measure, name: str, unit: str, base: float, candidate: float) -> Comparison:
    better = kinds.better_of(m)
    est = stats.estimate([base], [candidate], better, m.min_change, steady=True)
    return Comparison(
        name=name,
        unit=unit,
        better=better,
        min_change=m.min_change,
        on_worse=m.on_worse,
        base=round(base, 2),
        candidate=round(candidate, 2),
        change=est.change,
        low=est.low,
        high=est.high,
        runs=1,
        verdict=est.verdict,
        base_runs=[base],
        candidate_runs=[candidate],
    )


def _ours(path: str) -> bool:
    """A file of the tree (coverage.py names others by their absolute path)."""
    return not path.startswith("/") and ".." not in path.split("/")


def _total(lines: Lines, files: list[str]) -> int:
    return sum(len(lines.statements[p]) for p in files)


def _percent(covered: int, lines: Lines, files: list[str]) -> float:
    total = _total(lines, files)
    return 100.0 * covered / total if total else 0.0


def _lines(m: Measure, d: Directives, side: Side, space: CheckSpace, root: Path) -> Lines | None:
    """coverage.py's per-line report of the measure's run on ``side`` (None: the
    command is Go's or Node's, whose coverage is not credited)."""
    out = side.tree / kinds.OUT
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    where = f"measure {m.name} on {side.commit[:10]}"
    try:
        command = m.command or kinds.default_command(m, d)
        try:
            plan = kinds.plan(m, anchor_command(command, root) if command else None, out)
        except kinds.MeasureFailed as exc:
            raise MeasureError(f"{where}: {exc}") from None
        if "coverage json" not in plan.command:
            return None  # Go's or Node's coverage: no credit computed
        timeout = m.timeout_s or d.checks.timeout_s
        result = run_on(m, side, space, plan.command, out, timeout)
        report = out / "coverage.json"
        if result.timed_out:
            raise MeasureError(f"{where}: no result within {timeout:g} s (timeout_s)")
        if not report.is_file():
            raise MeasureError(f"{where}: the test command left no coverage report")
        data = json.loads(report.read_text())
        files = data.get("files", {})
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return Lines(
        {p: sorted(f["executed_lines"] + f["missing_lines"]) for p, f in files.items()},
        {p: set(f["executed_lines"]) for p, f in files.items()},
        float(data["totals"]["percent_covered"]),
        time.monotonic() - started,
    )


def _diff(base: Side, candidate: Side, path: str) -> str:
    """The attribute-proof diff (git.diff): a .gitattributes cannot blind it."""
    try:
        return git.diff(
            candidate.tree, "-U0", "--no-renames", base.commit, candidate.commit, "--", path
        )
    except GitError:
        return ""


def _carried(lines: set[int], diff: str) -> set[int]:
    """The base's ``lines`` as the candidate numbers them (``diff``: git diff -U0 of the
    file); a line the change removed or rewrote is carried nowhere."""
    hunks = [
        (int(m[1]), int(m[2] or "1"), int(m[4] or "1") - int(m[2] or "1"))
        for m in _HUNK.finditer(diff)
    ]
    found = set()
    for line in lines:
        shift, gone = 0, False
        for start, count, delta in hunks:
            end = start + count - 1 if count else start
            if count and start <= line <= end:
                gone = True
                break
            if line > end:
                shift += delta
        if not gone:
            found.add(line + shift)
    return found


def _stretches(statements: list[int], new: set[int]) -> list[list[int]]:
    """``new`` as runs of statements next to each other in the file."""
    runs: list[list[int]] = []
    previous = False
    for line in statements:
        if line in new:
            if previous:
                runs[-1].append(line)
            else:
                runs.append([line])
        previous = line in new
    return runs


def _span(lines: list[int]) -> str:
    return f"{lines[0]}-{lines[-1]}" if len(lines) > 1 else str(lines[0])
