"""`bench mine` says why it passed over commits: per reason, how many, with the commonest
error message; and it stops early, saying what to do, when the first commits all fail
the same way (here: every test file imports a module this machine does not have)."""

from __future__ import annotations

from pathlib import Path

from conftest import cli, git, make_repo

CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _commit(root: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def _function(name: str, body: str) -> str:
    return f"\n\ndef {name}(a, b):\n    return {body}\n"


def _test(name: str, call: str, expected: str) -> str:
    return (
        f"\n\ndef test_{name}():\n    from calc import {name}\n\n    assert {call} == {expected}\n"
    )


def test_mining_stops_when_every_parent_fails_to_collect_and_says_what_to_do(
    tmp_path: Path,
) -> None:
    broken = "import selfforge_no_such_module  # noqa\n" + TEST_CALC
    root = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": broken})
    code, tests = CALC, broken
    for name, body in (("sub", "a - b"), ("mul", "a * b"), ("mod", "a % b"), ("div", "a / b")):
        code, tests = code + _function(name, body), tests + _test(name, f"{name}(6, 3)", "0")
        _commit(root, f"Add {name}()", {"calc.py": code, "test_calc.py": tests})
    out = tmp_path / "instances.jsonl"
    proc = cli(
        "bench", "mine", "--repo", str(root), "--out", str(out), "--mutations", "0",
        "--stop-after", "3", env={"COLUMNS": "400"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join((proc.stdout + proc.stderr).split())
    assert (
        "stopped after 3 commits: every parent's tests fail to collect (ModuleNotFoundError: "
        "No module named 'selfforge_no_such_module'); install what the tests import in the "
        "venv, or pass --test-cmd"
    ) in said, said
    assert "Traceback" not in said


def test_mining_counts_each_reason_with_its_commonest_error(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    code, tests = CALC + _function("sub", "a - b"), TEST_CALC + _test("sub", "sub(5, 3)", "2")
    _commit(root, "Add sub()", {"calc.py": code, "test_calc.py": tests})  # an instance
    _commit(root, "Docs", {"README.md": "calc\n"})  # no test change
    code = code + "\n# a comment\n"
    tests += _test("add", "add(1, 1)", "2").replace("test_add", "test_add_again")
    _commit(root, "Test add() again", {"calc.py": code, "test_calc.py": tests})  # passes before
    for name in ("mul", "pow"):  # their new tests still fail on the commit
        code, tests = code + _function(name, "0"), tests + _test(name, f"{name}(2, 3)", "6")
        _commit(root, f"Add {name}()", {"calc.py": code, "test_calc.py": tests})
    out = tmp_path / "instances.jsonl"
    proc = cli(
        "bench", "mine", "--repo", str(root), "--out", str(out), "--mutations", "0",
        env={"COLUMNS": "400"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote 1 instance(s)" in proc.stdout
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    assert "5 commit(s) made no instance:" in lines, proc.stdout
    assert "2 change no test file together with code (or are the root commit)" in lines
    assert "1 have tests that already pass on the parent" in lines
    (failing,) = [line for line in lines if "still fail on the commit" in line]
    assert failing.startswith("2 have tests that still fail on the commit")
    assert failing.endswith("(commonest: assert 0 == 6, 2×)"), failing  # in both commits


def test_a_test_command_with_shell_syntax_is_run_as_written(tmp_path: Path) -> None:
    # `python` in --test-cmd is this interpreter; the rest of the shell command is kept
    # (its words were split and quoted anew: `'d=$(mktemp' '-d)'` ran nothing)
    root = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    code, tests = CALC + _function("sub", "a - b"), TEST_CALC + _test("sub", "sub(5, 3)", "2")
    _commit(root, "Add sub()", {"calc.py": code, "test_calc.py": tests})
    out = tmp_path / "instances.jsonl"
    proc = cli(
        "bench", "mine", "--repo", str(root), "--out", str(out), "--mutations", "0",
        "--test-cmd", 'd=$(mktemp -d) && test -d "$d" && python -m pytest',
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote 1 instance(s)" in proc.stdout, proc.stdout
