"""Measuring: one run of a measure on a tree (in the check sandbox, like a test run),
a revision's values, and two revisions compared by interleaved runs until the
statistics settle each measure or its budget (runs, seconds) ends."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.config import Directives, Measure
from selfforge.errors import SelfforgeError
from selfforge.judge.runners.import_roots import import_roots
from selfforge.judge.sandbox import policy
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.sandbox.command import (
    CommandResult,
    anchor_command,
    keep_pythonpath,
    run_command,
    trim,
)
from selfforge.measure import kinds, stats


class MeasureError(SelfforgeError):
    """A measure gave no number on a revision (exit 1): which, where, and why."""


@dataclass(frozen=True)
class Side:
    """One revision to measure: its commit and the worktree that holds it."""

    commit: str
    tree: Path


@dataclass
class Run:
    value: float
    seconds: float  # the run's wall time: the sandbox made, the command, its number read


def measure_once(
    m: Measure, d: Directives, side: Side, space: CheckSpace, root: Path | None = None
) -> Run:
    """One run of ``m`` on ``side``'s tree; MeasureError names the measure, the commit
    and the cause (the tail of its output). ``root``: the user's checkout, which a
    relative program (``.venv/bin/python``) is taken from."""
    started = time.monotonic()
    out = side.tree / kinds.OUT
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    command = m.command or kinds.default_command(m, d)
    if command and root is not None:
        command = anchor_command(command, root)
    try:
        plan = kinds.plan(m, command, out)
    except kinds.MeasureFailed as exc:
        raise MeasureError(str(exc)) from None
    timeout = m.timeout_s or d.checks.timeout_s
    result = run_on(m, side, space, plan.command, out, timeout)
    where = f"measure {m.name} on {side.commit[:10]}"
    if result.timed_out:
        raise MeasureError(f"{where}: no result within {timeout:g} s (timeout_s)")
    if result.exit_code != 0 and not plan.exit_ok:
        raise MeasureError(
            f"{where}: the command exited {result.exit_code}: {_tail(result.full_output, out)}"
        )
    try:
        value = kinds.read(m, result.full_output, result.exit_code, out, side.tree)
    except kinds.MeasureFailed as exc:
        raise MeasureError(f"{where}: {exc}: {_tail(result.full_output, out)}") from None
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return Run(value, time.monotonic() - started)


def run_on(
    m: Measure, side: Side, space: CheckSpace, command: str, out: Path, timeout: float
) -> CommandResult:
    """``command`` run on ``side``'s tree in the check sandbox as a measure's runs are:
    the tree's import roots on PYTHONPATH, ``out`` in SELFFORGE_MEASURE_DIR, the test
    runner's toolchain shown (measure/profile.py profiles a measure's command so too)."""
    roots = os.pathsep.join(str(p) for p in import_roots(side.tree))
    env = {**m.env, "PYTHONPATH": roots, "SELFFORGE_MEASURE_DIR": str(out)}
    shown = _shown(space)
    if space.adapter is not None:  # the test runner's toolchain (cargo's, go's) shown too
        toolchain = space.adapter.prepare(command, None, str(out)).env
        env |= {k: v for k, v in toolchain.items() if k.endswith("_HOME")}
    return run_command(
        keep_pythonpath(command), side.tree, timeout, shown, extra_env=env, head=side.commit
    )


def _shown(space: CheckSpace) -> CheckSpace:
    """The check space a measure runs in: the test runner's toolchain shown too."""
    if space.adapter is None:
        return space
    return dataclasses.replace(space, readable=(*space.readable, *space.adapter.home_needs()))


def policy_ahead(measures: list[Measure], space: CheckSpace, root: Path) -> None:
    """Start the sandbox policy's shared part of the first measure's command (the places
    shown, the credentials among them) in a thread, while the worktrees are made."""
    if measures and measures[0].command:
        policy.policy_ahead(_shown(space), anchor_command(measures[0].command, root))


def _tail(output: str, out: Path) -> str:
    stdout = out / "stdout"
    text = output + (stdout.read_text(errors="replace") if stdout.is_file() else "")
    lines = [line for line in trim(text, 0, 3, 400).splitlines() if line.strip()]
    return " | ".join(lines) or "it printed nothing"


@dataclass
class Value:
    """A measure's value at one revision."""

    name: str
    value: float
    unit: str
    seconds: float

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "runs": 1}


def values_at(
    measures: list[Measure], d: Directives, side: Side, space: CheckSpace, root: Path
) -> list[Value]:
    """Each measure's value at one revision (one run each)."""
    found = []
    for m in measures:
        run = measure_once(m, d, side, space, root)
        found.append(Value(m.name, run.value, kinds.unit_of(m), run.seconds))
    return found


@dataclass
class Comparison:
    """A measure between two revisions: both values (medians of their runs), the
    relative change with its interval, the pairs of runs taken and the verdict word."""

    name: str
    unit: str
    better: str
    min_change: float
    on_worse: str
    base: float
    candidate: float
    change: float | None
    low: float | None
    high: float | None
    runs: int
    verdict: str
    runs_needed: int | None = None
    seconds: float = 0.0  # the runs' own wall time, both sides
    base_runs: list[float] = field(default_factory=list, repr=False)
    candidate_runs: list[float] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "unit": self.unit,
            "better": self.better,
            "min_change": self.min_change,
            "base": self.base,
            "candidate": self.candidate,
            "change": self.change,
            "low": self.low,
            "high": self.high,
            "runs": self.runs,
            "verdict": self.verdict,
            "runs_needed": self.runs_needed,
            "note": self.note,
            "seconds": round(self.seconds, 3),
        }

    @property
    def note(self) -> str:
        """What an inconclusive verdict means, in words."""
        if self.verdict != stats.INCONCLUSIVE:
            return ""
        more = (
            f"about {self.runs_needed} runs per side would settle it"
            if self.runs_needed
            else "more runs are unlikely to settle it"
        )
        return f"the noise is larger than ±{self.min_change:.0%} after {self.runs} runs; {more}"

    def describe(self) -> str:
        """``dedupe: 55.6 ms → 0.1 ms, −99.8% [−99.9%, −99.7%], 12 runs: improved``."""
        change = "n/a" if self.change is None else f"{self.change:+.1%}"
        interval = ""
        if self.low is not None and self.high is not None and self.low != self.high:
            interval = f" [{self.low:+.1%}, {self.high:+.1%}]"
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        values = f"{show(self.base, self.unit)} → {show(self.candidate, self.unit)}"
        return f"{self.name}: {values}, {change}{interval}, {runs}: {self.verdict}"


def show(value: float, unit: str) -> str:
    text = f"{value:.0f}" if value == int(value) and abs(value) < 1e15 else f"{value:.4g}"
    return f"{text} {unit}".strip()


def compare(
    measures: list[Measure],
    d: Directives,
    base: Side,
    candidate: Side,
    space: CheckSpace,
    root: Path,
    on_pair: Callable[[Measure, int], None] | None = None,
) -> list[Comparison]:
    """Each measure on both revisions, runs interleaved (base, candidate, base, …) until
    its interval settles the verdict or its budget (max_runs pairs, max_seconds) ends.
    Measures run one after another, never two at once: a wall-time measure has the
    cores to itself while it measures."""
    return [_compare_one(m, d, base, candidate, space, root, on_pair) for m in measures]


def _compare_one(
    m: Measure,
    d: Directives,
    base: Side,
    candidate: Side,
    space: CheckSpace,
    root: Path,
    on_pair: Callable[[Measure, int], None] | None,
) -> Comparison:
    better = kinds.better_of(m)
    # The base is the unmodified revision a change is judged against (the baseline's
    # commit in `check`): its runs write the repository's build caches, as the
    # baseline's checks do; the candidate's see them through a copy (buildcache.py).
    # Without it each Go run compiled its test binary in an empty cache: most of its time.
    trusted = dataclasses.replace(space, trusted=True)
    a: list[float] = []
    b: list[float] = []
    spent = 0.0
    started = time.monotonic()
    est = stats.estimate(a, b, better, m.min_change, kinds.steady(m), m.max_runs)
    while len(a) < m.max_runs:
        if len(a) % 2 == 0:  # A B, then B A: a drift in the machine's speed hits both
            run_a = measure_once(m, d, base, trusted, root)
            run_b = measure_once(m, d, candidate, space, root)
        else:
            run_b = measure_once(m, d, candidate, space, root)
            run_a = measure_once(m, d, base, trusted, root)
        a.append(run_a.value)
        b.append(run_b.value)
        spent += run_a.seconds + run_b.seconds
        if on_pair is not None:
            on_pair(m, len(a))
        est = stats.estimate(a, b, better, m.min_change, kinds.steady(m), m.max_runs)
        if est.settled or time.monotonic() - started >= m.max_seconds:
            break
    return Comparison(
        name=m.name,
        unit=kinds.unit_of(m),
        better=better,
        min_change=m.min_change,
        on_worse=m.on_worse,
        base=stats.typical(a),
        candidate=stats.typical(b),
        change=est.change,
        low=est.low,
        high=est.high,
        runs=len(a),
        verdict=est.verdict,
        runs_needed=est.runs_needed,
        seconds=spent,
        base_runs=a,
        candidate_runs=b,
    )
