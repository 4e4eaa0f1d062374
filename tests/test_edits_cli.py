"""`selfforge apply-edits` through a real subprocess: exit codes 0, 1 and 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CALC = "def add(a, b):\n    return a - b\n"
GOOD = "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
BAD = "calc.py\n<<<<<<< SEARCH\n    return a * b\n=======\n    return 0\n>>>>>>> REPLACE\n"


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfforge", "apply-edits", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(CALC)
    return tmp_path


def test_exit_0_lists_changed_files(repo: Path) -> None:
    proc = run("--root", str(repo), stdin=GOOD)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "calc.py"
    assert "a + b" in (repo / "calc.py").read_text()


def test_exit_1_changes_nothing_and_explains(repo: Path, tmp_path: Path) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text(GOOD + BAD)
    proc = run("--root", str(repo), "--file", str(reply))
    assert proc.returncode == 1
    assert "Edit 2 (calc.py) failed: the SEARCH text was not found" in proc.stdout
    assert "The other edit was fine; resend only this one." in proc.stdout
    assert (repo / "calc.py").read_text() == CALC


def test_exit_1_for_protected_and_no_edits(repo: Path) -> None:
    proc = run("--root", str(repo), "--protected", "calc.py", stdin=GOOD)
    assert proc.returncode == 1 and "protected" in proc.stdout
    proc = run("--root", str(repo), "--format", "udiff", stdin="The bug is in add().")
    assert proc.returncode == 1 and "No edits were found" in proc.stdout
    assert (repo / "calc.py").read_text() == CALC


@pytest.mark.parametrize(
    "args",
    [
        ("--root", "/nonexistent/dir"),
        ("--root", "{repo}/calc.py"),
        ("--root", "{repo}", "--format", "xml"),
        ("--root", "{repo}", "--file", "{repo}/missing.txt"),
    ],
)
def test_exit_2_for_bad_usage(repo: Path, args: tuple[str, ...]) -> None:
    proc = run(*(a.format(repo=repo) for a in args), stdin=GOOD)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0
    assert (repo / "calc.py").read_text() == CALC


def test_repository_directives_protect_paths(repo: Path) -> None:
    (repo / "selfforge.toml").write_text('[safety]\nprotected = ["calc.py"]\n')
    proc = run("--root", str(repo), stdin=GOOD)
    assert proc.returncode == 1 and "protected (matches `calc.py`)" in proc.stdout
    reply = "selfforge.toml\n<<<<<<< SEARCH\n=======\n[limits]\n>>>>>>> REPLACE\n"
    proc = run("--root", str(repo), stdin=reply)
    assert proc.returncode == 1 and "protected" in proc.stdout
    (repo / "selfforge.toml").write_text("[safety]\nprotected = 3\n")
    assert run("--root", str(repo), stdin=GOOD).returncode == 2
    assert (repo / "calc.py").read_text() == CALC
