"""The built-in kinds of measure: what command each runs on a tree and how its number is
read from the real tool's output, so that nobody writes a script for the usual ones.

- ``command``: the command prints the number: its last number on stdout, or ``key``
  (dotted) of the JSON it prints;
- ``pytest-benchmark``: pytest-benchmark's JSON report (``--benchmark-json``), a stat
  (``metric``: median by default, in seconds) of one benchmark or of all, summed;
- ``go-bench``: ``go test -bench`` lines, ``metric`` ns/op (default), B/op or allocs/op;
- ``cargo-bench``: libtest's ``bench:  N ns/iter (+/- D)`` lines (``cargo bench``);
- ``coverage``: line coverage of the test command: coverage.py's JSON report for a
  Python command, ``go test -coverprofile`` for Go, Node's ``--experimental-test-coverage``
  table for ``node --test``;
- ``lint``: the number of findings of the lint command (the judge's lint parser);
- ``size``: bytes of the built file(s) ``file`` names (a glob), after ``command`` if any;
- ``instructions``: instructions executed by the command under Valgrind's cachegrind
  (every process it starts, summed): counts that the machine's load does not move.

Each run writes what it reports into a folder of its own in the tree (``OUT``), which
the next checkout of the worktree cleans.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from selfforge.config import Directives, Measure
from selfforge.judge.rules.lint import parse_lint

OUT = ".selfforge-measure"
# Kinds whose value is a count the machine's load does not move: one run per side.
STEADY_KINDS = ("coverage", "lint", "size", "instructions")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
UNITS = {
    "pytest-benchmark": "s",
    "go-bench": "ns/op",
    "cargo-bench": "ns/iter",
    "coverage": "%",
    "lint": "findings",
    "size": "bytes",
    "instructions": "instructions",
}


class MeasureFailed(Exception):
    """A run of a measure gave no number: why, in one line."""


@dataclass(frozen=True)
class Plan:
    """One run of a measure: the command line on the tree, and how the number is read."""

    command: str
    exit_ok: bool  # a non-zero exit still gives a number (lint, a coverage run's failures)


def better_of(m: Measure) -> str:
    return m.better or ("higher" if m.kind == "coverage" else "lower")


def unit_of(m: Measure) -> str:
    if m.unit:
        return m.unit
    if m.kind == "go-bench":
        return m.metric or "ns/op"
    return UNITS.get(m.kind, "")


def steady(m: Measure) -> bool:
    """A measure whose runs give the same number every time (a count, a size): one
    run per side; go-bench's B/op and allocs/op too."""
    return m.kind in STEADY_KINDS or (m.kind == "go-bench" and (m.metric or "ns/op") != "ns/op")


def default_command(m: Measure, d: Directives) -> str | None:
    """The command a kind runs when the measure names none."""
    match m.kind:
        case "pytest-benchmark":
            return "python -m pytest -q --benchmark-only -p no:cacheprovider"
        case "go-bench":
            return "go test -run '^$' -bench . -benchmem ./..."
        case "cargo-bench":
            return "cargo bench"
        case "coverage":
            return d.checks.test
        case "lint":
            return d.checks.lint
    return None


def plan(m: Measure, command: str | None, out: Path) -> Plan:
    """The command line of one run of ``m`` (``command``: the measure's, anchored, or
    its kind's default), writing its reports under ``out``."""
    if m.kind == "size":
        return Plan(command or "true", False)
    if not command:
        what = "[checks] lint" if m.kind == "lint" else "[checks] test"
        raise MeasureFailed(f"measure {m.name}: no command; give `command`, or {what}")
    match m.kind:
        case "command":
            return Plan(f"( {command} ) > {shlex.quote(str(out / 'stdout'))}", False)
        case "pytest-benchmark":
            return Plan(f"{command} --benchmark-json={shlex.quote(str(out / 'bench.json'))}", False)
        case "coverage":
            return Plan(_with_coverage(command, out), True)
        case "lint":
            return Plan(command, True)
        case "instructions":
            valgrind = (
                "valgrind --tool=cachegrind --cache-sim=no --trace-children=yes "
                f"--cachegrind-out-file={shlex.quote(str(out / 'cg.%p'))} "
            )
            return Plan(valgrind + "sh -c " + shlex.quote(command), False)
    return Plan(command, False)


def read(m: Measure, output: str, exit_code: int | None, out: Path, tree: Path) -> float:
    """The number of one run, from its output and the reports under ``out``."""
    match m.kind:
        case "command":
            return _printed(m, _text(out / "stdout"))
        case "pytest-benchmark":
            return read_pytest_benchmark(_text(out / "bench.json"), m.key, m.metric)
        case "go-bench":
            return read_go_bench(output, m.key, m.metric)
        case "cargo-bench":
            return read_cargo_bench(output, m.key)
        case "coverage":
            return _coverage(out, output)
        case "lint":
            return float(len(parse_lint(output, exit_code)))
        case "size":
            return size_of(tree, m.file or "")
        case "instructions":
            return read_cachegrind(out)
    raise MeasureFailed(f"unknown kind {m.kind}")


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        raise MeasureFailed(f"it wrote no {path.name}") from None


def _printed(m: Measure, stdout: str) -> float:
    if m.key:
        return _json_key(stdout, m.key)
    numbers = _NUMBER.findall(stdout)
    if not numbers:
        raise MeasureFailed("it printed no number on stdout")
    return _finite(float(numbers[-1]))


def _json_key(text: str, key: str) -> float:
    data = None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        for line in reversed(text.splitlines()):  # the last line that is a JSON object
            try:
                data = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
    if data is None:
        raise MeasureFailed("its stdout is not JSON; print a JSON object, or drop `key`")
    value = data
    for part in key.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise MeasureFailed(f"its JSON has no key {key!r}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MeasureFailed(f"its JSON's {key!r} is {value!r}, not a number")
    return _finite(float(value))


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise MeasureFailed(f"its number is {value}")
    return value


def read_pytest_benchmark(text: str, key: str | None, metric: str | None) -> float:
    """pytest-benchmark's JSON: ``stats[metric]`` of the benchmark named ``key`` (its
    name or full name), or of all of them, summed."""
    try:
        benches = json.loads(text)["benchmarks"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise MeasureFailed("pytest-benchmark's JSON report has no benchmarks") from None
    stat = metric or "median"
    chosen = [b for b in benches if key is None or key in (b.get("name"), b.get("fullname"))]
    if not chosen:
        raise MeasureFailed(
            f"pytest-benchmark ran no benchmark named {key!r}"
            if key
            else "pytest-benchmark ran no benchmark"
        )
    try:
        return _finite(sum(float(b["stats"][stat]) for b in chosen))
    except KeyError:
        raise MeasureFailed(f"pytest-benchmark's stats have no {stat!r}") from None


_GO_BENCH = re.compile(r"^(Benchmark\S*?)(?:-\d+)?\s+\d+\s+(\d.*)$")


def read_go_bench(output: str, key: str | None, metric: str | None) -> float:
    """``go test -bench`` result lines: ``BenchmarkX-8  1000  336.1 ns/op  0 B/op …``;
    ``metric`` of the benchmark ``key`` (its name without the -CPUs suffix, or without
    "Benchmark"), or of all of them, summed."""
    unit = metric or "ns/op"
    total, seen = 0.0, 0
    for line in output.splitlines():
        m = _GO_BENCH.match(line.strip())
        if not m or (key and key not in (m[1], m[1].removeprefix("Benchmark"))):
            continue
        figures = m[2].split()
        for value, name in zip(figures[::2], figures[1::2], strict=False):
            if name == unit:
                total += float(value)
                seen += 1
    if not seen:
        which = f" {key}" if key else ""
        raise MeasureFailed(f"go test -bench printed no{which} result in {unit}")
    return total


_CARGO_BENCH = re.compile(r"^test (\S+)\s+\.\.\. bench:\s+([\d,.]+) ns/iter")


def read_cargo_bench(output: str, key: str | None) -> float:
    """libtest's bench lines: ``test tests::bench_x ... bench:   1,234.50 ns/iter (+/- 9)``."""
    found = [
        float(m[2].replace(",", ""))
        for line in output.splitlines()
        if (m := _CARGO_BENCH.match(line.strip()))
        and (key is None or key in (m[1], m[1].rpartition("::")[2]))
    ]
    if not found:
        raise MeasureFailed("cargo bench printed no bench line" + (f" for {key}" if key else ""))
    return sum(found)


_PY_TESTS = re.compile(
    r"^(?P<pre>(?:[A-Za-z_]\w*=\S*\s+)*)(?:(?P<py>\S*python[\d.]*)\s+-m\s+)?(?P<tool>pytest|unittest)\b"
)
_GO_TEST = re.compile(r"(^|[\s;&|])go\s+test\b")
_NODE_TEST = re.compile(r"(^|[\s;&|])node\s+(?=.*--test\b)")


def _with_coverage(command: str, out: Path) -> str:
    """The test command made to record line coverage into ``out``."""
    q = shlex.quote
    if _GO_TEST.search(command):
        return _GO_TEST.sub(
            lambda m: f"{m[1]}go test -coverprofile={q(str(out / 'cover.out'))}", command, count=1
        )
    if _NODE_TEST.search(command):
        return _NODE_TEST.sub(
            lambda m: f"{m[1]}node --experimental-test-coverage ", command, count=1
        )
    m = _PY_TESTS.match(command.strip())
    if not m:
        raise MeasureFailed(
            "coverage reads coverage.py (python -m pytest / unittest), go test or node --test; "
            "give a command of one of them"
        )
    python = m["py"] or "python3"
    data = q(str(out / ".coverage"))
    rest = command.strip()[m.end() :]
    run = f"{m['pre']}{python} -m coverage run --data-file={data} -m {m['tool']}{rest}"
    report = f"{python} -m coverage json -q --data-file={data} -o {q(str(out / 'coverage.json'))}"
    return f"{run}; {report}"


def _coverage(out: Path, output: str) -> float:
    if (out / "cover.out").is_file():
        return read_go_cover_profile((out / "cover.out").read_text())
    if (out / "coverage.json").is_file():
        data = json.loads((out / "coverage.json").read_text())
        return _finite(float(data["totals"]["percent_covered"]))
    if m := re.search(r"^#?\s*all files\s*\|\s*([\d.]+)", output, re.M):  # node's table
        return float(m[1])
    raise MeasureFailed("the test command left no coverage report (is coverage.py installed?)")


def read_go_cover_profile(text: str) -> float:
    """Statements covered, in percent, of a ``go test -coverprofile`` file (a block seen
    in several packages' profiles counts once, covered if any covered it)."""
    blocks: dict[str, tuple[int, bool]] = {}
    for line in text.splitlines()[1:]:
        parts = line.rsplit(" ", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        where, statements, count = parts
        seen = blocks.get(where, (0, False))
        blocks[where] = (int(statements), seen[1] or count != "0")
    total = sum(n for n, _ in blocks.values())
    if not total:
        raise MeasureFailed("go test's cover profile lists no statement")
    return 100.0 * sum(n for n, covered in blocks.values() if covered) / total


def size_of(tree: Path, pattern: str) -> float:
    files = [p for p in sorted(tree.glob(pattern)) if p.is_file()]
    if not files:
        raise MeasureFailed(f"no file matches {pattern!r} in the tree (built by `command`?)")
    return float(sum(p.stat().st_size for p in files))


def read_cachegrind(out: Path) -> float:
    """Instructions executed: the ``summary:`` line of each process's cachegrind file."""
    total, files = 0, 0
    for path in out.glob("cg.*"):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("summary:"):
                total += int(line.split()[1])
                files += 1
    if not files:
        raise MeasureFailed("valgrind wrote no cachegrind summary (is valgrind installed?)")
    return float(total)
