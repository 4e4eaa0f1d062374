"""Per-test results through any wrapper (#22.2): whatever starts pytest — a shell script,
make, a script that runs two suites — reports to the judge through its channel."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    TEST_CALC,
    cli,
    directives,
    log_json,
    make_repo,
)

PY = sys.executable
# Two suites, then a release check that passes; the worst status is the script's.
SCRIPT = (
    f"#!/bin/sh\n{PY} -m pytest -q tests_a; a=$?\n{PY} -m pytest -q tests_b; b=$?\n"
    'echo "release check ok"\nexit $((a | b))\n'
)
MAKEFILE = f"test:\n\t{PY} -m pytest -q tests_a tests_b\n"
TEST_B = "from calc import mul\n\n\ndef test_mul_again():\n    assert mul(2, 2) == 4\n"


def _repo(tmp_path: Path, command: str) -> Path:
    files = {
        "calc.py": CALC,
        "tests_a/test_calc.py": TEST_CALC,
        "tests_b/test_more.py": TEST_B,
        "run_tests.sh": SCRIPT,
        "Makefile": MAKEFILE,
    }
    return make_repo(tmp_path / "r", files, directives(test=command))


@pytest.mark.parametrize("command", ["sh run_tests.sh", "make test"], ids=["script", "make"])
def test_a_wrapped_pytest_reports_every_test(
    command: str, tmp_path: Path, script: Callable[..., str]
) -> None:
    if command.startswith("make") and shutil.which("make") is None:
        pytest.skip("make is not installed")
    repo = _repo(tmp_path, command)
    spec = script(propose=[FIX_ADD_BREAK_SUB, FIX_ADD])
    proc = cli("run", "--repo", str(repo), "--model", spec, "--cycles", "2", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"tests: 4 collected, 3 passed, 1 failed' in proc.stdout  # both suites counted
    first, second = log_json(repo)
    assert first["outcome"] == "rejected" and "test_sub" in str(first["reason"])
    assert second["outcome"] == "accepted", second["reason"]
