"""Directives: one clear line and exit 2 for each kind of bad file; init writes a good one."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.config import load_directives

from conftest import CALC, TEST_CALC, cli, make_repo, needs_path_pytest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[limits]\ncycles = 3\n[checks\ntest = 'x'\n", ["selfforge.toml", "line 3"]),
        (
            "[goals]\nitems = ['a']\n\n[limits]\ncycle = 3\n",
            ["selfforge.toml:5", "unknown key 'limits.cycle'", "cycles"],
        ),
        ("[limits]\nmax_repairs = 'two'\n", ["selfforge.toml:2", "limits.max_repairs", "'two'"]),
        ("[roles]\nenabled = ['plan']\n", ["selfforge.toml:2", "propose"]),
        ("[land]\nmode = 'yolo'\n", ["selfforge.toml:2", "land.mode"]),
        (
            "[checks]\ntest = 'python -m pytest -q'\nrunner = 'deno'\n",
            ["runner = 'deno'", "runners are auto, go, cargo", "bun", "pytest"],
        ),
    ],
    ids=["syntax", "unknown-key", "wrong-type", "propose-required", "bad-choice", "runner"],
)
def test_bad_directives_get_one_line_and_exit_2(tmp_path: Path, text: str, expected: list[str]):
    repo = make_repo(tmp_path / "r", {"calc.py": CALC}, text)
    proc = cli("run", "--repo", str(repo), "--model", "script:/nonexistent.json")
    assert proc.returncode == 2
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert "Traceback" not in proc.stderr + proc.stdout
    for part in expected:
        assert part in message


def test_directives_in_pyproject_are_read(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "x"\n\n[tool.selfforge.goals]\nitems = ["Be fast"]\n'
    repo = make_repo(tmp_path / "r", {"pyproject.toml": pyproject})
    loaded = load_directives(repo)
    assert loaded.directives.goals.items == ["Be fast"]
    # The [tool.selfforge] table is guarded by the directives gate, not the whole file
    # (dependency edits are common and legitimate): tests/test_directives_trust.py.
    assert "pyproject.toml" not in loaded.protected
    assert "selfforge.toml" in loaded.protected


def test_pyproject_errors_name_the_line(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "x"\n\n[tool.selfforge.limits]\ncycles = -1\n'
    repo = make_repo(tmp_path / "r", {"pyproject.toml": pyproject})
    proc = cli("run", "--repo", str(repo))
    assert proc.returncode == 2
    assert "pyproject.toml:5" in proc.stderr and "limits.cycles" in proc.stderr


@needs_path_pytest
def test_init_detects_pytest_and_writes_valid_directives(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "tests/test_calc.py": TEST_CALC})
    proc = cli("init", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    loaded = load_directives(repo)
    assert loaded.directives.checks.test == "python -m pytest -q"
    assert loaded.directives.goals.items
    assert cli("init", "--repo", str(repo)).returncode == 2  # refuses to overwrite


def test_not_a_git_repository_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli("run", "--repo", str(tmp_path))
    assert proc.returncode == 2
    assert "not inside a git repository" in proc.stderr


def test_no_goals_says_how_to_add_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC}, "[limits]\ncycles = 1\n")
    proc = cli("run", "--repo", str(repo), "--model", "script:x.json")
    assert proc.returncode == 2
    assert "--goal" in proc.stderr


def test_files_the_checks_run_are_protected(tmp_path: Path) -> None:
    text = '[checks]\ntest = "CI=1 sh scripts/test.sh && make lint"\nlint = "grep x *.py | wc"\n'
    repo = make_repo(tmp_path / "r", {"calc.py": CALC}, text)
    protected = load_directives(repo).protected
    assert "scripts/test.sh" in protected and "Makefile" in protected
    assert "selfforge.toml" in protected
    assert "*.py" not in protected and "calc.py" not in protected
