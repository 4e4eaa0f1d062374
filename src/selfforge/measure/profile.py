"""Where the numbers say the work is (issue 42, point 6): each measured goal's measure
profiled on the current code, for the planner to choose its next task from.

- a Python command (``python …``, ``pytest``, a pytest-benchmark run) runs under
  ``python -m cProfile``: the project's own hottest functions by their own time (the
  standard library, site-packages and the tree's virtualenv left out);
- a Go benchmark (``go-bench``, a command running ``go test``) runs with
  ``-cpuprofile``, read with ``go tool pprof -top``: the module's own functions (the
  runtime and the standard library left out);
- a ``coverage`` measure gives the lines no test runs, per file, as line ranges;
- any other command (a native program, ``cargo bench``, a script of another language),
  where the machine has Linux ``perf``: ``perf record``, read with ``perf report``: the
  project's own functions (those of programs built in the tree, or in a Cargo
  ``target``), by their share of the samples;
- otherwise (a count, a size; no perf): "no profile for this kind".

A profile runs as the measure does (measure/sample.run_on: the check sandbox, on a
worktree of the commit), bounded by ``PROFILE_TIMEOUT_S``. One that fails is one line
saying why; it never stops the run.
"""

from __future__ import annotations

import json
import pstats
import re
import shlex
import shutil
from pathlib import Path

from selfforge.config import Directives, Measure
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.sandbox.command import anchor_command
from selfforge.measure import kinds
from selfforge.measure.sample import Side, run_on
from selfforge.repo.workspace import Workspace

PROFILE_TIMEOUT_S = 120.0  # one profile's run at most (or the measure's own timeout)
TOP = 8  # functions shown per measure
MIN_SHARE = 0.005  # a Python function shown takes at least this share of the run's time
MAX_FILES = 10  # files whose uncovered lines are shown
SLOT = "measure-base"
_PYTHON = re.compile(r"^(?P<pre>(?:[A-Za-z_]\w*=\S*\s+)*)(?P<py>\S*python[\d.]*)\s+(?P<rest>.*)$")
_PYTEST = re.compile(r"^(?P<pre>(?:[A-Za-z_]\w*=\S*\s+)*)(?P<tool>pytest)\b(?P<rest>.*)$")
_GO_TEST = re.compile(r"(^|[\s;&|])go\s+test\b")
_GO_BENCH_FUNC = re.compile(r"^func Benchmark\w*\(\w+ \*testing\.B\)", re.M)
_NO_PROFILE = ("lint", "size")  # a count, a size: nothing runs that a profile would show
_NOT_OURS = ("site-packages", "dist-packages", ".venv", "venv", kinds.OUT, "node_modules")


def for_planner(ws: Workspace, d: Directives, space: CheckSpace, commit: str) -> str:
    """The profile of each measure a goal names, at ``commit`` (a worktree of its own):
    the text the planner's prompt shows, a few lines per measure."""
    names = [n for goal in d.goals.items for n in d.goals.measured.get(goal, [])]
    measures = [m for m in d.measures if m.name in dict.fromkeys(names)]
    if not measures:
        return ""
    try:
        side = Side(commit, ws.create_worktree(SLOT, commit))
    except Exception as exc:
        return f"no profile: the worktree could not be made: {_one_line(exc)}"
    return "\n".join(profile(m, d, side, space, ws.root) for m in measures)


def profile(m: Measure, d: Directives, side: Side, space: CheckSpace, root: Path) -> str:
    """One measure's profile on ``side``, or one line saying why there is none."""
    head = f"measure {m.name}"
    out = side.tree / kinds.OUT
    try:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        command = m.command or kinds.default_command(m, d)
        if command:
            command = anchor_command(command, root)
        if m.kind in _NO_PROFILE:
            return f"{head}: no profile for this kind ({m.kind})"
        if m.kind == "coverage":
            return f"{head} (coverage): {_uncovered(m, d, side, space, command, out)}"
        if m.kind == "go-bench" or (command and _GO_TEST.search(command)):
            return f"{head} ({m.kind}): {_go(m, d, side, space, out)}"
        if command and (wrapped := _with_cprofile(command, out / "profile.pstats")):
            return f"{head} ({m.kind}): {_python(m, d, side, space, wrapped, out)}"
        if command and shutil.which("perf"):
            return f"{head} ({m.kind}): {_perf(m, d, side, space, command, out)}"
        return f"{head}: no profile for this kind ({m.kind}: {command or 'no command'})"
    except _NoProfile as exc:
        return f"{head}: no profile: {exc}"
    except Exception as exc:
        return f"{head}: no profile: {_one_line(exc)}"
    finally:
        shutil.rmtree(out, ignore_errors=True)


class _NoProfile(Exception):
    """Why a profile gave nothing, in one line."""


def _run(m: Measure, d: Directives, side: Side, space: CheckSpace, command: str, out: Path) -> str:
    timeout = min(PROFILE_TIMEOUT_S, m.timeout_s or d.checks.timeout_s)
    result = run_on(m, side, space, command, out, timeout)
    if result.timed_out:
        raise _NoProfile(f"the profiled run took more than {timeout:g} s")
    return result.full_output


def _with_cprofile(command: str, target: Path) -> str | None:
    """``command`` run under cProfile, when it starts a Python program or pytest."""
    text = command.strip()
    if any(sep in text for sep in (";", "&&", "||", "|")):
        return None  # a pipeline: which of its programs to profile is not known
    dest = shlex.quote(str(target))
    if m := _PYTHON.match(text):
        return f"{m['pre']}{m['py']} -m cProfile -o {dest} {m['rest']}"
    if m := _PYTEST.match(text):
        return f"{m['pre']}python3 -m cProfile -o {dest} -m pytest{m['rest']}"
    return None


def _python(
    m: Measure, d: Directives, side: Side, space: CheckSpace, command: str, out: Path
) -> str:
    output = _run(m, d, side, space, command, out)
    data = out / "profile.pstats"
    if not data.is_file():
        raise _NoProfile(f"cProfile wrote no profile: {_last_line(output)}")
    return hottest_python(pstats.Stats(str(data)), side.tree)


def hottest_python(stats: pstats.Stats, tree: Path) -> str:
    """The project's own functions (files in ``tree``, not a virtualenv's) by own time."""
    total = getattr(stats, "total_tt", 0.0) or 1e-9
    rows = []
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = _in_tree(filename, tree)
        if where is None:
            continue
        rows.append((own, f"{where}:{line} {name}", cumulative, calls))
    if not rows:
        return "cProfile saw none of the project's own functions run"
    rows.sort(key=lambda r: -r[0])
    rows = [r for r in rows if r[0] >= MIN_SHARE * total] or rows[:3]  # not the idle ones
    shown = [
        f"  {what}: {own:.3f} s own ({own / total:.0%} of the run), {cum:.3f} s with callees, "
        f"{calls} call{'s' if calls != 1 else ''}"
        for own, what, cum, calls in rows[:TOP]
    ]
    return "the project's hottest functions under cProfile (own time):\n" + "\n".join(shown)


def _in_tree(filename: str, tree: Path) -> str | None:
    if filename.startswith(("<", "~")):
        return None
    path = Path(filename)
    path = path if path.is_absolute() else tree / path
    try:
        relative = path.resolve().relative_to(tree.resolve())
    except (ValueError, OSError):
        return None
    if any(part in _NOT_OURS for part in relative.parts):
        return None
    return relative.as_posix()


def _perf(m: Measure, d: Directives, side: Side, space: CheckSpace, command: str, out: Path) -> str:
    q = shlex.quote
    data, report = out / "perf.data", out / "perf.txt"
    wrapped = (
        f"perf record -q --no-buildid-cache -F 999 -o {q(str(data))} -- sh -c {q(command)}"
        f" && perf report -v -i {q(str(data))} --stdio --no-children --sort dso,sym"
        f" --percent-limit {MIN_SHARE * 100:g} > {q(str(report))} 2>/dev/null"
    )
    output = _run(m, d, side, space, wrapped, out)
    if not report.is_file() or not report.stat().st_size:
        raise _NoProfile(f"perf gave no profile: {_last_line(output)}")
    return hottest_native(report.read_text(errors="replace"), side.tree)


_PERF_ROW = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s.*?\[[.k]\]\s+(.+?)\s*$")


def hottest_native(report: str, tree: Path) -> str:
    """The project's own functions of ``perf report -v --sort dso,sym``: those of programs
    built in ``tree`` (or in a Cargo ``target`` folder), by their share of the samples."""
    rows = []
    for line in report.splitlines():
        row = _PERF_ROW.match(line)
        if row is None or row[2].startswith("["):
            continue
        where = _in_tree(row[2], tree) or ("target" in Path(row[2]).parts and row[2]) or None
        if where:
            rows.append(f"  {row[3]} ({Path(where).name}): {row[1]}% of the samples")
    if not rows:
        return "perf saw none of the project's own programs run"
    return "the project's hottest functions under perf (own samples):\n" + "\n".join(rows[:TOP])


def _go(m: Measure, d: Directives, side: Side, space: CheckSpace, out: Path) -> str:
    module = _go_module(side.tree)
    package = _go_bench_package(side.tree)
    if module is None or package is None:
        raise _NoProfile("no go.mod, or no Benchmark function in a _test.go file")
    q = shlex.quote
    cpu, binary, top = out / "cpu.out", out / "bench.test", out / "top.txt"
    bench = f"-bench {q(m.key)}" if m.key else "-bench ."
    command = (
        f"go test -run '^$' {bench} -cpuprofile {q(str(cpu))} -o {q(str(binary))} {q(package)}"
        f" && go tool pprof -top -nodecount=200 {q(str(binary))} {q(str(cpu))} > {q(str(top))}"
    )
    output = _run(m, d, side, space, command, out)
    if not top.is_file():
        raise _NoProfile(f"go test -cpuprofile gave no profile: {_last_line(output)}")
    return hottest_go(top.read_text(errors="replace"), module)


_PPROF_ROW = re.compile(r"^\s*(\S+)\s+([\d.]+%)\s+[\d.]+%\s+(\S+)\s+([\d.]+%)\s+(.+)$")


def hottest_go(top: str, module: str) -> str:
    """The module's own functions of ``go tool pprof -top``'s table, by own (flat) time."""
    rows = []
    for line in top.splitlines():
        row = _PPROF_ROW.match(line)
        if row is None or float(row[2].rstrip("%")) == 0:  # a header, or no own time
            continue
        if row[5].startswith((module + ".", module + "/")):
            rows.append(f"  {row[5]}: {row[1]} own ({row[2]}), {row[3]} with callees ({row[4]})")
    if not rows:
        return f"pprof saw none of {module}'s own functions run"
    return "the project's hottest functions under go test -cpuprofile (own time):\n" + "\n".join(
        rows[:TOP]
    )


def _go_module(tree: Path) -> str | None:
    gomod = tree / "go.mod"
    if not gomod.is_file():
        return None
    found = re.search(r"^module\s+(\S+)", gomod.read_text(errors="replace"), re.M)
    return found[1] if found else None


def _go_bench_package(tree: Path) -> str | None:
    """The first package (``./dir``) with a Benchmark function: -cpuprofile takes one."""
    for path in sorted(tree.rglob("*_test.go")):
        parts = path.relative_to(tree).parts
        if any(p in ("vendor", ".git", kinds.OUT) for p in parts):
            continue
        if _GO_BENCH_FUNC.search(path.read_text(errors="replace")):
            return "./" + "/".join(parts[:-1]) if len(parts) > 1 else "."
    return None


def _uncovered(
    m: Measure, d: Directives, side: Side, space: CheckSpace, command: str | None, out: Path
) -> str:
    try:
        plan = kinds.plan(m, command, out)
    except kinds.MeasureFailed as exc:
        raise _NoProfile(str(exc)) from None
    output = _run(m, d, side, space, plan.command, out)
    if (out / "coverage.json").is_file():
        files = json.loads((out / "coverage.json").read_text()).get("files", {})
        missing = {
            path: (sorted(f.get("executed_lines", []) + f.get("missing_lines", [])),
                   set(f.get("missing_lines", [])))
            for path, f in files.items()
        }  # fmt: skip
    elif (out / "cover.out").is_file():
        missing = _go_missing((out / "cover.out").read_text(errors="replace"), side.tree)
    else:
        raise _NoProfile(f"the test command left no coverage report: {_last_line(output)}")
    return uncovered_text(missing)


def uncovered_text(files: dict[str, tuple[list[int], set[int]]]) -> str:
    """``files``: path -> (its statements' lines, the lines no test ran). The files with
    the most lines left, each as ranges of statements next to each other."""
    found = []
    for path, (statements, missing) in files.items():
        if missing and not any(p in _NOT_OURS for p in Path(path).parts):
            found.append((len(missing), path, _ranges(statements, missing)))
    if not found:
        return "every line the tests could run ran"
    found.sort(key=lambda f: (-f[0], f[1]))
    shown = [f"  {path}: lines {ranges} ({n} not run)" for n, path, ranges in found[:MAX_FILES]]
    more = len(found) - MAX_FILES
    tail = [f"  … and {more} more file(s)"] if more > 0 else []
    return "lines no test runs (uncovered):\n" + "\n".join(shown + tail)


def _ranges(statements: list[int], missing: set[int]) -> str:
    runs: list[list[int]] = []
    previous_missing = False
    for line in statements:
        if line in missing:
            if previous_missing:
                runs[-1].append(line)
            else:
                runs.append([line])
        previous_missing = line in missing
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _go_missing(profile: str, tree: Path) -> dict[str, tuple[list[int], set[int]]]:
    """``go test -coverprofile`` blocks as statements' lines: a block's first line, per
    file (its path made relative to the module)."""
    module = _go_module(tree) or ""
    files: dict[str, tuple[list[int], set[int]]] = {}
    covered: dict[tuple[str, int], bool] = {}
    for line in profile.splitlines()[1:]:
        found = re.match(r"^(.+):(\d+)\.\d+,(\d+)\.\d+ \d+ (\d+)$", line.strip())
        if not found:
            continue
        path = found[1].removeprefix(module + "/")
        for row in range(int(found[2]), int(found[3]) + 1):
            key = (path, row)
            covered[key] = covered.get(key, False) or found[4] != "0"
    for (path, row), ran in sorted(covered.items()):
        statements, missing = files.setdefault(path, ([], set()))
        statements.append(row)
        if not ran:
            missing.add(row)
    return files


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "it printed nothing"


def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
