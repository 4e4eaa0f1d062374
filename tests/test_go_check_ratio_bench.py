"""bench/go_check_ratio.py, the README's Go figures, runs end to end on a tiny module:
the plain `go test`, the one after the change, a warm `selfforge check` and the ratios."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_repo

GO_MOD = "module example.com/mathx\n\ngo 1.19\n"
MATHX = "package mathx\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
MATHX_TEST = (
    'package mathx\n\nimport "testing"\n\n'
    'func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("Add")\n\t}\n}\n'
)

BENCH = Path(__file__).resolve().parents[1] / "bench" / "go_check_ratio.py"


@pytest.mark.slow  # a check twice and three plain runs
@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
def test_the_go_bench_prints_each_figure(tmp_path: Path) -> None:
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    repo = make_repo(tmp_path / "mod", files)
    done = subprocess.run(
        [sys.executable, str(BENCH), "--repo", str(repo), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for label in ("plain go test", "fresh go test", "selfforge check"):
        assert re.search(rf"^{label}\s+\d+\.\d\d s", out, re.M), out
    # the defaults: the first check started a resident, the timed ones were handed to it
    assert re.search(r"^  by default\s+\d+\.\d\d s \(warm, through the resident", out, re.M), out
    assert re.search(r"^ratio\s+\d+\.\d\dx plain, \d+\.\d\dx fresh", out, re.M), out
    assert "(1 test files)" in out
