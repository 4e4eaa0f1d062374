"""The loop chooses work from the numbers (issue 42, point 6): with measured goals and no
task, the planner's prompt holds a real profile of each goal's measure on the current
code: the project's own hottest functions (cProfile for Python, go test -cpuprofile for
Go) and a coverage measure's uncovered lines."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from tests.conftest import cli, make_repo

PY = sys.executable
APP = """def slow():
    total = 0
    for i in range(400000):
        total += i * i
    return total


def quick():
    return 1


def scale(x):
    if x > 1:
        return x * 2
    return 0
"""
BENCH = """import time

from app import quick, slow

start = time.perf_counter()
slow()
quick()
print(f"run: {(time.perf_counter() - start) * 1000:.3f} ms")
"""
TEST = """from app import quick


def test_quick():
    assert quick() == 1
"""


def _checks(test: str = f"{PY} -m pytest -q -p no:cacheprovider") -> str:
    """The directives' checks and limits for one planning cycle: this test command, no
    reruns."""
    return f'[checks]\ntest = "{test}"\nreruns = 0\n\n[limits]\ncycles = 1\n'


def _planned_numbers(repo: Path, script) -> str:
    """One planning round with the scripted model: its prompt's section of the numbers."""
    proc = cli("run", "--repo", str(repo), "--model", script(plan=["DONE"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [prompt] = _plan_prompts(repo)
    return prompt.split("## Where the measured goals' numbers say the work is")[1]


def _plan_prompts(repo: Path) -> list[str]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = db.execute("SELECT prompt FROM model_calls WHERE role = 'plan' ORDER BY id")
        return [p for (p,) in rows]


def test_the_plan_is_given_the_hottest_functions_and_the_uncovered_lines(
    tmp_path: Path, script
) -> None:
    """Two measured goals: a speed measure (a Python script, profiled with cProfile) and
    a coverage measure; one not named by a goal is not profiled. The plan's prompt names
    slow() as the hottest of the project's own functions (no stdlib, no site-packages)
    and app.py's lines no test runs; a profile that fails is one line, the run goes on."""
    toml = f"""[goals]
items = [{{ text = "Make the benchmark faster", measure = "speed" }},
         {{ text = "Raise the line coverage", measure = "cov" }},
         {{ text = "Keep the tool fast", measure = "gone" }}, "Keep it tidy"]

{_checks()}
[[measures]]
name = "speed"
command = "{PY} bench/run_bench.py"
unit = "ms"

[[measures]]
name = "cov"
kind = "coverage"

[[measures]]
name = "gone"
command = "{PY} bench/missing.py"

[[measures]]
name = "other"
command = "{PY} -c 'print(1)'"
"""
    files = {"app.py": APP, "bench/run_bench.py": BENCH, "test_app.py": TEST}
    repo = make_repo(tmp_path / "r", files, toml)
    numbers = _planned_numbers(repo, script)
    speed = numbers.split("measure speed (command): ")[1].split("measure cov")[0]
    first = speed.splitlines()[1].strip()
    assert first.startswith("app.py:1 slow: "), numbers  # the hottest, first
    assert "with callees" in first and "1 call" in first
    assert "lib/python" not in speed and "site-packages" not in speed, speed  # ours only
    assert "measure cov (coverage): lines no test runs" in numbers, numbers
    assert "app.py: lines 2-5, 13-15" in numbers, numbers  # slow's and scale's bodies
    assert "measure other" not in numbers  # no goal names it
    [gone] = [line for line in numbers.splitlines() if line.startswith("measure gone")]
    assert gone.startswith("measure gone: no profile: cProfile wrote no profile: "), gone


@pytest.mark.slow  # 14-27 s at load 7-9: go test builds, benchmarks and profiles, twice
@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_a_go_benchmark_is_profiled_with_cpuprofile(tmp_path: Path, script) -> None:
    """A go-bench goal: `go test -cpuprofile` read with `go tool pprof -top`; the module's
    own hottest function is named, the runtime's are not; a Go coverage goal: the lines
    of `go test -coverprofile` no test runs."""
    hot = """package hot

func Slow(n int) int {
	t := 0
	for i := 0; i < n; i++ {
		t += i % 7
	}
	return t
}

func Half(n int) int {
	return n / 2
}
"""
    bench = """package hot

import "testing"

func BenchmarkSlow(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Slow(200000)
	}
}

func TestSlow(t *testing.T) {
	if Slow(7) != 21 {
		t.Fatal("Slow(7)")
	}
}
"""
    toml = f"""[goals]
items = [{{ text = "Make the benchmark faster", measure = "bench" }},
         {{ text = "Cover the code", measure = "cover" }}]

{_checks("go test ./...")}
[[measures]]
name = "bench"
kind = "go-bench"

[[measures]]
name = "cover"
kind = "coverage"
"""
    files = {"go.mod": "module example.com/hot\n\ngo 1.21\n", "hot.go": hot, "hot_test.go": bench}
    repo = make_repo(tmp_path / "g", files, toml)
    numbers = _planned_numbers(repo, script)
    assert "measure bench (go-bench): the project's hottest functions" in numbers, numbers
    first = numbers.split("(own time):\n")[1].splitlines()[0].strip()
    assert first.startswith("example.com/hot.Slow"), numbers  # "Slow (inline): 0.88s own"
    assert "runtime." not in numbers and "testing." not in numbers
    assert "measure cover (coverage): lines no test runs" in numbers, numbers
    assert "hot.go: lines 11-13 (3 not run)" in numbers, numbers  # Half(), from -coverprofile


HOT_C = """static volatile long t;

void spin(long n) {
    for (long i = 0; i < n; i++) t += i % 7;
}

void quick(void) { t += 1; }

int main(void) {
    spin(60000000L);
    quick();
    return 0;
}
"""


@pytest.mark.skipif(
    shutil.which("perf") is None or shutil.which("cc") is None, reason="needs perf and cc"
)
def test_a_native_program_is_profiled_with_perf(tmp_path: Path, script) -> None:
    """A measured goal whose command is neither Python nor Go (a C program built and run):
    where the machine has Linux perf, the plan's prompt names the program's own hottest
    function by its share of the samples, and no library's."""
    toml = f"""[goals]
items = [{{ text = "Make the program faster", measure = "native" }}]

{_checks()}
[[measures]]
name = "native"
command = "cc -O1 -o hot hot.c && ./hot && echo 1"
"""
    files = {"hot.c": HOT_C, "app.py": APP, "test_app.py": TEST}
    repo = make_repo(tmp_path / "r", files, toml)
    numbers = _planned_numbers(repo, script)
    native = numbers.split("measure native (command): ")[1]
    assert native.startswith("the project's hottest functions under perf"), numbers
    first = native.splitlines()[1].strip()
    assert first.startswith("spin (hot): ") and "% of the samples" in first, numbers
    assert "libc" not in native, native  # the project's own only
