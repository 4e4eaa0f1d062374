"""A test command that sets PYTHONPATH itself (the usual src layout) keeps its value and
is judged as any other: selfforge adds its own paths after it (#22.4)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from conftest import cli, directives, log_json, make_repo

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = (
    "from shop.calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n"
)


def _edit(old: str, new: str) -> str:
    return f"src/shop/calc.py\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def test_a_src_layout_command_with_its_own_pythonpath_judges(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    files = {"src/shop/__init__.py": "", "src/shop/calc.py": CALC, "tests/test_calc.py": TESTS}
    command = f"PYTHONPATH=src {sys.executable} -m pytest -q"
    repo = make_repo(tmp_path / "r", files, directives(test=command, goals=("Fix add()",)))
    fix = _edit("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")
    breaks = _edit("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a * b")
    spec = script(propose=[fix + "\n" + breaks, fix])
    proc = cli("run", "--repo", str(repo), "--task", "Fix add()", "--model", spec, "--cycles", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Error importing plugin" not in proc.stdout + proc.stderr
    first, second = log_json(repo)
    assert first["outcome"] == "rejected" and "test_sub" in str(first["reason"])
    assert second["outcome"] == "accepted", second["reason"]
