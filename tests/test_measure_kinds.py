"""The built-in kinds of measure (issue 42, point 1), each read from the real tool's
real output through `selfforge measure`: pytest-benchmark's JSON, `go test -bench`,
coverage.py and `go test -coverprofile`, the lint command (ruff), Valgrind's
cachegrind, a built file's size, and libtest's bench lines (`cargo bench`)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from tests.conftest import CARGO_STARTS, cli, git, make_repo

from selfforge.measure import kinds

PY = sys.executable
BIN = Path(sys.executable).parent
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs go")
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")


def _measure(repo: Path, *args: str) -> dict:
    proc = cli("measure", *args, "--repo", str(repo), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {m["name"]: m for m in json.loads(proc.stdout)["measures"]}


def _commit(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return git(repo, "rev-parse", "HEAD").strip()


def test_pytest_benchmark_json(tmp_path: Path) -> None:
    bench = (
        "def total(n):\n    return sum(i * i for i in range(n))\n\n\n"
        "def test_total(benchmark):\n    assert benchmark(total, 2000) > 0\n\n\n"
        "def test_small(benchmark):\n    benchmark(total, 10)\n\n\n"
        "def test_big(benchmark):\n    benchmark(total, 100000)\n"
    )
    run = f"{PY} -m pytest -q --benchmark-only -p pytest_benchmark.plugin"
    measures = (
        f'[[measures]]\nname = "all"\nkind = "pytest-benchmark"\ncommand = "{run}"\n\n'
        f'[[measures]]\nname = "one"\nkind = "pytest-benchmark"\nkey = "test_total"\n'
        f'metric = "min"\ncommand = "{run}"\n'
    )
    repo = make_repo(tmp_path / "r", {"test_bench.py": bench}, measures)
    found = _measure(repo)
    assert found["all"]["unit"] == "s"
    # one benchmark's min, below the sum of all three medians (test_big's alone takes ~50
    # times as long; the two come from separate runs, so only a wide gap holds under any
    # load): the key and the metric were read
    assert 0 < found["one"]["value"] < found["all"]["value"] / 5
    assert found["all"]["value"] > 0


GO_CODE = """package gob

func Sum(n int) int {
\ts := 0
\tfor i := 0; i < n; i++ {
\t\ts += i
\t}
\treturn s
}

func Alloc(n int) []int { return make([]int, n) }
"""
GO_TEST = """package gob

import "testing"

func TestSum(t *testing.T) {
\tif Sum(3) != 3 {
\t\tt.Fatal("sum")
\t}
}

func BenchmarkSum(b *testing.B) {
\tfor i := 0; i < b.N; i++ {
\t\tSum(1000)
\t}
}

func BenchmarkAlloc(b *testing.B) {
\tfor i := 0; i < b.N; i++ {
\t\tAlloc(100)
\t}
}
"""


@needs_go
def test_go_bench_and_go_coverage(tmp_path: Path) -> None:
    """`go test -bench -benchmem` read per metric (ns/op varies, B/op does not: one run
    per side), and `go test -coverprofile` as line coverage."""
    bench = "go test -run '^$' -bench . -benchmem -benchtime 2000x ./..."
    measures = (
        f'[[measures]]\nname = "sum"\nkind = "go-bench"\nkey = "Sum"\ncommand = "{bench}"\n\n'
        f'[[measures]]\nname = "bytes"\nkind = "go-bench"\nkey = "BenchmarkAlloc"\n'
        f'metric = "B/op"\ncommand = "{bench}"\n\n'
        '[[measures]]\nname = "cover"\nkind = "coverage"\n'
    )
    files = {"go.mod": "module example.com/gob\n\ngo 1.19\n", "f.go": GO_CODE, "f_test.go": GO_TEST}
    repo = make_repo(tmp_path / "r", files, '[checks]\ntest = "go test ./..."\n\n' + measures)
    found = _measure(repo)
    assert found["sum"]["value"] > 0 and found["sum"]["unit"] == "ns/op"
    assert found["bytes"]["value"] == 896 and found["bytes"]["unit"] == "B/op"  # 100 ints
    assert found["cover"]["value"] == pytest.approx(100 * 4 / 5)  # Alloc's body not run
    base = git(repo, "rev-parse", "HEAD").strip()
    tip = _commit(repo, {"f.go": GO_CODE.replace("make([]int, n)", "make([]int, 2*n)")})
    compared = _measure(repo, f"{base}..{tip}", "--measure", "bytes", "--measure", "cover")
    assert compared["bytes"]["verdict"] == "worse" and compared["bytes"]["runs"] == 1
    assert compared["bytes"]["change"] == pytest.approx(1.0, abs=0.1)
    assert compared["cover"]["verdict"] == "unchanged" and compared["cover"]["runs"] == 1


def test_python_coverage_goes_up_with_a_new_test(tmp_path: Path) -> None:
    """coverage.py's report of the [checks] test command: a test that runs g() raises the
    line coverage: improved (higher is better), one run per side."""
    code = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    test = "from mod import f\n\n\ndef test_f():\n    assert f() == 1\n"
    directives = (
        f'[checks]\ntest = "{PY} -m pytest -q"\n\n[[measures]]\nname = "cov"\nkind = "coverage"\n'
    )
    repo = make_repo(tmp_path / "r", {"mod.py": code, "test_mod.py": test}, directives)
    [before] = _measure(repo).values()
    assert 0 < before["value"] < 100 and before["unit"] == "%"
    base = git(repo, "rev-parse", "HEAD").strip()
    tip = _commit(
        repo, {"test_g.py": "from mod import g\n\n\ndef test_g():\n    assert g() == 2\n"}
    )
    [cov] = _measure(repo, f"{base}..{tip}").values()
    assert cov["verdict"] == "improved" and cov["better"] == "higher" and cov["runs"] == 1
    assert cov["candidate"] == 100.0 and cov["base"] == before["value"]


def test_lint_findings_of_ruff(tmp_path: Path) -> None:
    """The lint command's findings (ruff, concise): two unused imports, then one."""
    lint = f"{BIN / 'ruff'} check --output-format concise --no-cache ."
    directives = f'[checks]\nlint = "{lint}"\n\n[[measures]]\nname = "lint"\nkind = "lint"\n'
    repo = make_repo(tmp_path / "r", {"a.py": "import os\nimport sys\n"}, directives)
    base = git(repo, "rev-parse", "HEAD").strip()
    assert _measure(repo)["lint"]["value"] == 2
    tip = _commit(repo, {"a.py": "import os\n\nprint(os.sep)\n"})
    lint_m = _measure(repo, f"{base}..{tip}")["lint"]
    assert (lint_m["base"], lint_m["candidate"], lint_m["verdict"]) == (2, 0, "improved")
    assert lint_m["unit"] == "findings" and lint_m["runs"] == 1


@needs_valgrind
def test_instructions_under_cachegrind(tmp_path: Path) -> None:
    """Instructions counted by Valgrind's cachegrind (every process, summed): ten times
    the loop is worse, from one run per side."""
    script = "import sys\nprint(sum(range(int(sys.argv[1]))))\n"
    command = f"{sys.base_exec_prefix}/bin/python3 -S loop.py $(cat n.txt)"
    measures = f'[[measures]]\nname = "ins"\nkind = "instructions"\ncommand = "{command}"\n'
    repo = make_repo(tmp_path / "r", {"loop.py": script, "n.txt": "20000\n"}, measures)
    base = git(repo, "rev-parse", "HEAD").strip()
    tip = _commit(repo, {"n.txt": "400000\n"})
    ins = _measure(repo, f"{base}..{tip}")["ins"]
    assert ins["unit"] == "instructions" and ins["runs"] == 1
    assert ins["verdict"] == "worse" and ins["candidate"] > ins["base"] > 1_000_000


# A line of `cargo bench`'s real output (libtest's #[bench] on rustc 1.95 with
# RUSTC_BOOTSTRAP=1; a stable toolchain runs no #[bench] otherwise).
CARGO_LINE = "test tests::bench_sum ... bench:       2,512.72 ns/iter (+/- 3,598.36)"


def test_cargo_bench_line_is_read() -> None:
    """Parse-only, from a real captured line (the CLI test below needs cargo)."""
    assert kinds.read_cargo_bench(f"running 1 test\n{CARGO_LINE}\n", None) == 2512.72
    assert kinds.read_cargo_bench(CARGO_LINE, "bench_sum") == 2512.72
    with pytest.raises(kinds.MeasureFailed):
        kinds.read_cargo_bench(CARGO_LINE, "bench_other")


RUST_LIB = """#![feature(test)]
extern crate test;

pub fn sum(n: u64) -> u64 {
    (0..n).fold(0, |a, b| a ^ b.wrapping_mul(31))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test::Bencher;

    #[bench]
    fn bench_sum(b: &mut Bencher) {
        b.iter(|| sum(test::black_box(1000)));
    }
}
"""


@pytest.mark.slow
@pytest.mark.skipif(not CARGO_STARTS, reason="needs cargo with a toolchain")
def test_cargo_bench_through_the_cli(tmp_path: Path) -> None:
    cargo = '[package]\nname = "b"\nversion = "0.1.0"\nedition = "2021"\n'
    measures = (
        '[[measures]]\nname = "sum"\nkind = "cargo-bench"\nkey = "bench_sum"\n'
        'command = "RUSTC_BOOTSTRAP=1 cargo bench --offline"\n'
    )
    directives = '[checks]\ntest = "cargo test --offline"\n\n' + measures  # its toolchain
    repo = make_repo(tmp_path / "r", {"Cargo.toml": cargo, "src/lib.rs": RUST_LIB}, directives)
    found = _measure(repo)
    assert found["sum"]["value"] > 0 and found["sum"]["unit"] == "ns/iter"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_node_coverage_of_node_test(tmp_path: Path) -> None:
    """`node --test` with Node's own coverage (--experimental-test-coverage): the "all
    files" line of its table (f run, g not: 6 of 7 lines of the two files)."""
    code = "function f() { return 1; }\nfunction g() { return 2; }\nmodule.exports = { f, g };\n"
    test = (
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { f } = require('./m.js');\ntest('f', () => { assert.strictEqual(f(), 1); });\n"
    )
    directives = '[checks]\ntest = "node --test"\n\n[[measures]]\nname = "cov"\nkind = "coverage"\n'
    repo = make_repo(tmp_path / "r", {"m.js": code, "m.test.js": test}, directives)
    assert _measure(repo)["cov"]["value"] == pytest.approx(85.71)
