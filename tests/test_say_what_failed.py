"""Say what failed where the user looks: step lines name the failing tests and the new
lint findings; `show` puts outcome, checks and diff first, prompts last or behind
--prompts (and leaves them out by default on a terminal)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import cli, directives, make_repo

SRC = "def one():\n    return 1\n"
TESTS = "".join(
    f"from m import one\n\n\ndef test_{i}():\n    assert one() == 1\n\n\n"
    if i == 0
    else f"def test_{i}():\n    assert one() == 1\n\n\n"
    for i in range(5)
)
BREAK_ALL = "m.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
UNUSED_IMPORT = (
    "m.py\n<<<<<<< SEARCH\ndef one():\n=======\nimport os\n\n\ndef one():\n>>>>>>> REPLACE\n"
)
LINT = f"{sys.executable} -m ruff check --output-format concise --isolated --select F ."


def _repo(tmp_path: Path) -> Path:
    text = directives(goals=("Tidy m.py",), lint=LINT)
    return make_repo(tmp_path / "repo", {"m.py": SRC, "test_m.py": TESTS}, text)


def test_the_step_line_names_up_to_three_failing_tests(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = _repo(tmp_path)
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[BREAK_ALL]))
    [line] = [ln for ln in proc.stdout.splitlines() if "✗ tests" in ln]
    assert "test_m.py::test_0, test_m.py::test_1, test_m.py::test_2 +2 more" in line


def test_the_step_line_names_the_new_lint_finding(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = _repo(tmp_path)
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[UNUSED_IMPORT]))
    [line] = [ln for ln in proc.stdout.splitlines() if "✗ lint" in ln]
    assert "F401" in line and "m.py" in line


def test_show_puts_the_verdict_first_and_prompts_last_or_behind_a_flag(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = _repo(tmp_path)
    cli("run", "--repo", str(repo), "--model", script(propose=[BREAK_ALL]), check=True)
    full = cli("show", "last", "--repo", str(repo), check=True).stdout  # piped: everything
    assert full.index("outcome:") < full.index("── check") < full.index("── diff")
    assert full.index("── diff") < full.index("prompt:")
    brief = cli("show", "last", "--brief", "--repo", str(repo), check=True).stdout
    assert "prompt:" not in brief and "--prompts" in brief
    assert "── diff" in brief and "test_m.py::test_0" in brief

    # On a terminal (a real pseudo-terminal), `show` is brief unless --prompts is given.
    assert "prompt:" not in _on_a_terminal(repo, "show", "last")
    assert "prompt:" in _on_a_terminal(repo, "show", "last", "--prompts")


def _on_a_terminal(repo: Path, *args: str) -> str:
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfforge", *args, "--repo", str(repo)],
        stdout=follower,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200"},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode(errors="replace")
