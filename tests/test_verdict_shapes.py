"""The judge is right on the common shapes of change (#22): a new feature whose tests
were written first lands; every worse outcome is a regression, not only passed → failed.
Each case is a real project, a real run through the CLI, the scripted model proposing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from selfforge.judge.gates import exit_code_gate
from selfforge.judge.sandbox.command import CommandResult
from selfforge.judge.verdict import Observed

from conftest import cli, directives, log_json, make_repo

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


def _edit(path: str, old: str, new: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n"


def _run(repo: Path, task: str, spec: str) -> dict[str, object]:
    cli("run", "--repo", str(repo), "--task", task, "--model", spec, check=True)
    return log_json(repo)[-1]


def _tests_first(tmp_path: Path) -> Path:
    files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "tests/test_mul.py": TEST_MUL}
    return make_repo(tmp_path / "r", files, directives(goals=("Add mul()",)))


ADD_MUL = _edit("calc.py", CALC, CALC + "\n\ndef mul(a, b):\n    return a * b\n")
WRONG_MUL = _edit("calc.py", CALC, CALC + "\n\ndef mul(a, b):\n    return a + b\n")


def test_a_new_feature_whose_tests_fail_to_import_on_the_base_lands(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = _tests_first(tmp_path)
    attempt = _run(repo, "Make the failing tests pass", script(propose=[ADD_MUL]))
    assert attempt["outcome"] == "accepted", attempt["reason"]


def test_a_task_naming_a_test_of_a_module_that_does_not_import_yet_requires_it(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = _tests_first(tmp_path)
    task = "Add mul() so tests/test_mul.py::test_mul passes"
    wrong = _run(repo, task, script(propose=[WRONG_MUL]))
    assert wrong["outcome"] == "rejected"
    assert "not done" in str(wrong["reason"]) and "tests/test_mul.py::test_mul" in str(
        wrong["reason"]
    )
    assert _run(repo, task, script(propose=[ADD_MUL]))["outcome"] == "accepted"


XFAIL = (
    "import pytest\n\nfrom calc import add\n\n\n"
    "@pytest.mark.xfail(strict=True, reason='add() of floats is known wrong')\n"
    "def test_floats():\n    assert add(0.5, 0.25) == 1\n"
)


def test_a_strict_xfail_that_starts_passing_is_a_regression(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "tests/test_known.py": XFAIL}
    repo = make_repo(tmp_path / "r", files, directives(goals=("Tidy",)))
    weird = _edit("calc.py", CALC, "def add(a, b):\n    return 1 if a == 0.5 else a + b\n")
    attempt = _run(repo, "Tidy add()", script(propose=[weird]))
    assert attempt["outcome"] == "rejected"
    assert "tests/test_known.py::test_floats: xfailed → failed" in str(attempt["reason"])


def test_a_passing_test_skipped_or_xfailed_by_the_code_is_a_regression(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC}
    repo = make_repo(tmp_path / "r", files, directives(goals=("Tidy",)))
    for call, outcome in (("skip", "skipped"), ("xfail", "xfailed")):
        body = (
            f"def add(a, b):\n    import pytest\n\n    pytest.{call}('later')\n    return a + b\n"
        )
        attempt = _run(repo, "Tidy add()", script(propose=[_edit("calc.py", CALC, body)]))
        assert attempt["outcome"] == "rejected", attempt
        assert f"tests/test_calc.py::test_add: passed → {outcome}" in str(attempt["reason"])


def test_an_exit_code_that_goes_from_0_to_failing_is_a_regression() -> None:
    base = Observed(tests_result=CommandResult("pytest", 0, False, 1.0, ""))
    assert exit_code_gate(base, CommandResult("pytest", 0, False, 1.0, "")).ok
    verdict = exit_code_gate(base, CommandResult("pytest", 1, False, 1.0, "1 xpassed"))
    assert not verdict.ok and "exited 1 where it exited 0 before" in verdict.reason
    was_failing = Observed(tests_result=CommandResult("pytest", 1, False, 1.0, ""))
    assert exit_code_gate(was_failing, CommandResult("pytest", 1, False, 1.0, "")).ok


PARAM_MUL = (
    "import pytest\n\nfrom calc import mul\n\n\n"
    "@pytest.mark.parametrize('a, b, want', [(2, 3, 6), (0, 5, 0)], "
    "ids=['small numbers', '  zero #1'])\n"
    "def test_mul(a, b, want):\n    assert mul(a, b) == want\n"
)


def test_named_parametrized_ids_with_spaces_are_required_whole(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "tests/test_mul.py": PARAM_MUL}
    repo = make_repo(tmp_path / "r", files, directives(goals=("Add mul()",)))
    ids = "tests/test_mul.py::test_mul[small numbers], tests/test_mul.py::test_mul[  zero #1]"
    attempt = _run(
        repo, f"Add mul(). The failing tests must pass: {ids}", script(propose=[ADD_MUL])
    )
    assert attempt["outcome"] == "accepted", attempt["reason"]
