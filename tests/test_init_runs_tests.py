"""`init` writes only a test command it saw run and collect here (issue 34.4): a suite
that cannot collect is not written (its line stays commented out) and init says, per
command, what it said and the fix; `doctor` fails on such a suite and passes once it
collects. Failing tests are fine: they are what a run fixes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, cli, directives, git, make_repo, needs_path_pytest

BROKEN_CONFTEST = "import module_nobody_installed\n"


def _init(repo: Path) -> tuple[str, dict]:
    proc = cli("init", "--force", "--repo", str(repo), check=True)
    return proc.stdout, tomllib.loads((repo / "selfforge.toml").read_text())["checks"]


@needs_path_pytest
def test_a_suite_whose_conftest_cannot_import_is_not_written(tmp_path: Path) -> None:
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "conftest.py": BROKEN_CONFTEST}
    repo = make_repo(tmp_path / "p", files)
    out, checks = _init(repo)
    assert "test" not in checks, checks  # a command that cannot judge is not written
    assert '# test = "python -m pytest -q"' in (repo / "selfforge.toml").read_text()
    [line] = [ln for ln in out.splitlines() if "not used:" in ln]  # one line: all of it
    assert "python -m pytest -q" in line
    assert "conftest.py cannot be imported" in line and "module_nobody_installed" in line
    assert "fix: install what provides `module_nobody_installed`" in line
    assert "none written" in out and "init --force" in out


@needs_path_pytest
@pytest.mark.parametrize("front_end", [False, True])
def test_a_project_whose_dependencies_are_not_installed_is_told_to_pip_install(
    tmp_path: Path, front_end: bool
) -> None:
    """The project declares a dependency its environment lacks: every test module fails
    to import; the fix is `pip install -e .`, not another test command. A package.json
    for its front end, not installed either, is not what stops pytest."""
    files = {
        "pyproject.toml": '[project]\nname = "calc"\nversion = "0"\n'
        'dependencies = ["numbers-nobody-installed"]\n',
        "calc.py": "import numbers_nobody_installed\n" + CALC,
        "tests/test_calc.py": TEST_CALC,
    }
    if front_end:
        files["package.json"] = '{"name": "ui", "devDependencies": {"prettier": "3.0.0"}}'
    repo = make_repo(tmp_path / "p", files)
    out, checks = _init(repo)
    assert "test" not in checks, out
    assert "node_modules" not in out
    assert "every test module fails to import (tests/test_calc.py: " in out
    assert "No module named 'numbers_nobody_installed'" in out
    assert (
        "fix: `python -m pip install -e .` (the project and the dependencies it declares; "
        "`numbers_nobody_installed` is missing)"
    ) in out


@needs_path_pytest
def test_a_suite_with_failing_tests_is_written(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    out, checks = _init(repo)
    assert checks["test"] == "python -m pytest -q"
    assert "ran here: 3 collected, 2 passed, 1 failed" in out and "not used" not in out


def test_doctor_fails_until_the_suite_collects(tmp_path: Path, script) -> None:
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "conftest.py": BROKEN_CONFTEST}
    repo = make_repo(tmp_path / "p", files, directives())
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert proc.returncode == 1, proc.stdout
    assert "FAIL test check:" in proc.stdout
    assert "conftest.py cannot be imported (ModuleNotFoundError" in proc.stdout
    assert "fix: install what provides `module_nobody_installed`" in proc.stdout

    (repo / "conftest.py").write_text("")
    git(repo, "commit", "-qam", "conftest imports nothing missing")
    proc = cli("doctor", "--repo", str(repo), "--model", script())
    assert proc.returncode == 0, proc.stdout
    assert "ok   test check: `" in proc.stdout and "3 collected, 2 passed, 1 failed" in proc.stdout
