"""`selfforge` run as a command ends without the interpreter's teardown of every module
it loaded (~0.1 s of a warm check): what a normal exit does first still happens (threads
joined, exit handlers run, output flushed) and the exit code is the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import CALC, TEST_CALC, directives, git, make_repo, trees_dir


def _selfforge(*args: str, repo: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SELFFORGE_RESIDENT": "0", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "selfforge", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _commit(repo: Path, text: str) -> None:
    (repo / "calc.py").write_text(text)
    git(repo, "commit", "-qam", "change calc")


def test_a_check_exits_with_its_verdict_and_its_exit_handlers_ran(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    _commit(repo, CALC.replace("return a - b", "return a + b", 1))
    accepted = _selfforge("check", "HEAD", "--json", repo=repo)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert json.loads(accepted.stdout)["verdict"] == "accepted"  # all of it flushed
    # the check's private git templates are removed by exit handlers (judge/sandbox/check_git.py)
    scratch = trees_dir(repo) / "tmp"
    assert not list(scratch.glob("selfforge-git-*")), list(scratch.iterdir())
    _commit(repo, CALC.replace("return a * b", "return a + b", 1))
    rejected = _selfforge("check", "HEAD", repo=repo)
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    assert "rejected" in rejected.stdout


def test_a_usage_error_still_says_why_and_exits_non_zero(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    done = _selfforge("run", "--model", "nosuchprovider:x", repo=repo)
    assert done.returncode not in (0, None)
    assert "nosuchprovider" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
