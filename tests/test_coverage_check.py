"""`selfforge check` measures which lines a change adds the tests execute (issue 41,
point 3): the ratio in the tests:coverage step and in ``--json``; a change of which no
line is run by any test needs review ("no test runs the changed code"). Python
(coverage.py through selfforge's pytest plugin), Go (``go test -coverprofile``), Node
(``node --test``, V8 coverage); Rust says it is not measured and keeps its verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, check_json, directives, git, make_repo, needs_cargo

# add() fixed: test_add runs it
FIXED = CALC.replace("return a - b", "return a + b", 1)
# a new function no test calls
UNCALLED = CALC + "\n\ndef div(a, b):\n    if b == 0:\n        return None\n    return a / b\n"


def _commit(repo: Path, files: dict[str, str], message: str = "change") -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


@pytest.fixture
def py_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def test_python_change_the_tests_run_is_accepted_with_its_ratio(py_repo: Path) -> None:
    _commit(py_repo, {"calc.py": FIXED})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"] == {
        "measured": True,
        "tool": "coverage.py",
        "changed_lines": 1,
        "run": 1,
        "not_run": {"calc.py": []},
    }


def test_python_change_no_test_calls_needs_review(py_repo: Path) -> None:
    _commit(py_repo, {"calc.py": UNCALLED})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 3, verdict
    assert verdict["verdict"] == "needs_review"
    [item] = verdict["review"]
    assert item == "no test runs the changed code: calc.py:14-16"
    assert verdict["coverage"]["changed_lines"] == 3 and verdict["coverage"]["run"] == 0


def test_a_new_test_that_runs_the_new_code_counts(py_repo: Path) -> None:
    """The change's own suite (tests:new) runs too: its new test covers the new code."""
    test = TEST_CALC.replace(
        "from calc import add, mul, sub", "from calc import add, div, mul, sub"
    )
    test += "\n\ndef test_div():\n    assert div(6, 3) == 2\n"
    _commit(py_repo, {"calc.py": UNCALLED, "test_calc.py": test})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 0, verdict
    # the def line only declares (run at import whatever calls it): the body counts
    assert verdict["coverage"]["changed_lines"] == 3
    assert verdict["coverage"]["run"] == 2
    assert verdict["coverage"]["not_run"] == {"calc.py": [15]}  # `return None`


def test_without_coverage_py_the_check_says_not_measured(tmp_path: Path) -> None:
    """A project whose Python has no coverage.py: not measured, said; the verdict is
    the one the tests give."""
    venv = tmp_path / "venv"
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    # coverage hidden from this venv's Python by a module that fails to import
    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "coverage.py").write_text("raise ImportError('hidden')\n")
    command = f"PYTHONPATH={tmp_path / 'hide'} {venv}/bin/python -m pytest -q"
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(command)
    )
    _commit(repo, {"calc.py": UNCALLED})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"]["measured"] is False
    assert "coverage.py is not installed" in verdict["coverage"]["note"]
