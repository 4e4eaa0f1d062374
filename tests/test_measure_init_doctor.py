"""`init` proposes the measures it finds and `doctor` runs each declared one once
(issue 42, point 1)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, cli, make_repo

PY = sys.executable


def test_init_proposes_pytest_benchmark_and_a_go_benchmark(tmp_path: Path) -> None:
    files = {
        "calc.py": CALC,
        "test_calc.py": TEST_CALC,
        "requirements-dev.txt": "pytest\npytest-benchmark\n",
        "benchmarks/test_speed.py": "def test_speed(benchmark):\n    benchmark(sum, [1, 2])\n",
    }
    repo = make_repo(tmp_path / "p", files)
    proc = cli("init", "--force", "--repo", str(repo), check=True)
    text = (repo / "selfforge.toml").read_text()
    assert '# [[measures]]\n# name = "benchmarks"\n# kind = "pytest-benchmark"\n' in text
    assert "--benchmark-only benchmarks" in text
    assert "measures:   benchmarks" in proc.stdout and "uncomment" in proc.stdout

    if shutil.which("go") is None:
        pytest.skip("no go here")
    bench = 'package g\n\nimport "testing"\n\nfunc BenchmarkX(b *testing.B) {}\n'
    # and a benchmarks folder holding a script (no pytest-benchmark): a command measure
    go = {
        "go.mod": "module example.com/g\n\ngo 1.19\n",
        "g_test.go": bench,
        "bench/run_bench.py": "print(1.0)\n",
    }
    go_repo = make_repo(tmp_path / "g", go)
    proc = cli("init", "--force", "--repo", str(go_repo), check=True)
    text = (go_repo / "selfforge.toml").read_text()
    assert '# name = "go-bench"\n# kind = "go-bench"' in text
    assert '# name = "benchmark"\n# command = "' in text and ' bench/run_bench.py"' in text
    assert "measures:   benchmark, go-bench" in proc.stdout, proc.stdout


def test_doctor_runs_each_measure_once(tmp_path: Path, script) -> None:
    directives = (
        f'[checks]\ntest = "{PY} -m pytest -q"\n\n'
        '[[measures]]\nname = "code"\nkind = "size"\nfile = "calc.py"\n\n'
        '[[measures]]\nname = "broken"\ncommand = "echo nothing to see"\n'
    )
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives)
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert f"ok   measure code: {len(CALC)} bytes" in out
    assert "FAIL measure broken: measure broken on " in out and "printed no number" in out
    assert "fix the measure's command" in out and "Traceback" not in proc.stderr
