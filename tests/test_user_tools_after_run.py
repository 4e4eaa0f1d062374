"""Issue 34.2: nothing of selfforge's in the user's checkout but what they asked for.
Right after a run lands a fix, the user's own `node --test` must pass; today it walks the
worktree the run kept for the next one (the old, buggy baseline) and fails. Marked as
known failing until selfforge keeps its trees outside the checkout's folder: the git dir
is no answer (Node 20's `node --test` walks `.git/` too, and Jest finds no test in a tree
under `.git/`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_runner_node import FIX, MATH, NODE_20, PACKAGE, TASK, TESTS

from conftest import cli, directives, log_json, make_repo

pytestmark = pytest.mark.skipif(not NODE_20, reason="needs node 20 or later")


@pytest.mark.xfail(
    strict=True, reason="issue 34.2: the kept worktrees are inside the checkout's folder"
)
def test_the_users_node_test_passes_right_after_a_run_landed_a_fix(tmp_path: Path, script) -> None:
    files = {"package.json": PACKAGE, "math.js": MATH, "test/math.test.js": TESTS}
    repo = make_repo(tmp_path / "repo", files, directives("node --test"))
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX]), "--task", TASK)
    assert (log_json(repo)[-1]["outcome"], log_json(repo)[-1]["landed"]) == ("accepted", True)
    own = subprocess.run(["node", "--test"], cwd=repo, capture_output=True, text=True)
    assert own.returncode == 0, own.stdout[-2000:]
