"""bench/speed_ratio.py, the README's speed figures, runs end to end on a small repository:
the plain suite, then a judged change of each kind (a first run, warm, after the user's
own commit), each landed, with the ratio and the time beyond the test runs printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, git, make_repo

BENCH = Path(__file__).resolve().parents[1] / "bench" / "speed_ratio.py"


@pytest.mark.slow  # three judged runs and eight plain ones
def test_the_speed_bench_measures_each_kind_of_judged_change(tmp_path: Path) -> None:
    fixed = CALC.replace("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub", 1)
    repo = make_repo(tmp_path / "src", {"calc.py": fixed, "test_calc.py": TEST_CALC})
    command = [sys.executable, str(BENCH), "--repo", str(repo), "--runs", "1", "--samples", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.search(r"plain suite\s+\d+\.\d\d s", out), out
    for label in ("cold, first", "warm", "cold, moved"):
        line = next(line for line in out.splitlines() if line.startswith(f"judged, {label} "))
        ratio = float(re.search(r"(\d+\.\d\d)x", line)[1])  # type: ignore[index]
        assert ratio > 1.0 and "accepted, landed" in line, line
    assert "cold, moved" in out and "baseline: tests: 3 collected" in out  # measured anew
    for label in ("check, cold", "check, warm", "check, cold, 1 job"):  # check of a patch
        line = next(line for line in out.splitlines() if line.startswith(f"judged, {label} "))
        assert "accepted; " in line and "tests" in line, line
    assert re.search(r"warm \+-?\d+\.\d\d s \(one suite\)", out), out
    assert git(repo, "status", "--porcelain") == ""  # the bench works on a clone of its own
