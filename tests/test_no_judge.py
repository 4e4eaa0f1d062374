"""No judge, no landing (#22.4): a run whose directives name no test command, or one
that reports no per-test results, refuses before any model call; the explicit opt-out
warns on every run and lands only to branches; doctor says so."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, make_repo

PYTEST_STYLE = {"calc.py": CALC, "test_calc.py": TEST_CALC}


@pytest.mark.parametrize(
    ("test", "expected", "code"),
    [
        (None, "names no test command ([checks] test)", 2),
        ("true", "without per-test results", 1),
        (f"{sys.executable} -m unittest discover", "collected no tests (Ran 0 tests", 1),
    ],
    ids=["no-command", "true", "zero-tests"],
)
def test_a_run_without_a_judge_refuses(
    test: str | None, expected: str, code: int, tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = make_repo(tmp_path / "r", PYTEST_STYLE, directives(test=test))
    head = git(repo, "rev-parse", "HEAD")
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert expected in proc.stderr and 'tests = "none"' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head  # nothing landed


def test_the_opt_out_warns_and_lands_only_to_a_branch(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    text = directives(test="true").replace("[checks]", '[checks]\ntests = "none"')
    repo = make_repo(tmp_path / "r", PYTEST_STYLE, text)
    head = git(repo, "rev-parse", "HEAD")
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 0, proc.stderr
    assert 'tests = "none"' in proc.stderr and "never landed on yours" in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head
    assert "selfforge/" in git(repo, "branch", "--list", "selfforge/*")


def test_doctor_is_not_ready_without_a_test_command(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "r", PYTEST_STYLE, directives(test=None))
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert proc.returncode == 1 and "ready." not in proc.stdout
    assert "no test command" in proc.stdout and 'tests = "none"' in proc.stdout
