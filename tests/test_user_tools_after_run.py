"""Issue 34.2: nothing of selfforge's in the user's checkout but what they asked for.
Right after a run lands a fix, the user's own test runners, walking their checkout, find
only their own tests: selfforge's copies of the code (the worktree kept for the next run
holds the old, buggy baseline) live outside it, in a private folder per user
(``SELFFORGE_TREES``; the suite's conftest points it at a temp folder). The git dir was
no answer: Node 20's `node --test` walks `.git/` too, and Jest finds no test under it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_runner_cargo import FIX as CARGO_FIX
from test_runner_cargo import _repo as cargo_repo
from test_runner_go import FIX as GO_FIX
from test_runner_go import TASK as GO_TASK
from test_runner_go import _repo as go_repo
from test_runner_js_frameworks import BIN, FRAMEWORKS, RUNNERS, SPEC
from test_runner_js_frameworks import EXPECT as JEST_EXPECT
from test_runner_js_frameworks import _repo as js_repo
from test_runner_node import FIX, MATH, NODE_20, PACKAGE, TASK, TESTS

from conftest import (
    CALC,
    FIX_ADD,
    PYTEST,
    TEST_CALC,
    cli,
    directives,
    log_json,
    make_repo,
    needs_cargo,
    trees_dir,
)

needs_node = pytest.mark.skipif(not NODE_20, reason="needs node 20 or later")


def _landed(repo: Path, model: str, task: str) -> None:
    cli("run", "--repo", str(repo), "--model", model, "--task", task)
    assert (log_json(repo)[-1]["outcome"], log_json(repo)[-1]["landed"]) == ("accepted", True)
    assert (trees_dir(repo) / "worktrees" / "baseline").is_dir()  # kept, but elsewhere


@needs_node
def test_the_users_node_test_passes_right_after_a_run_landed_a_fix(tmp_path: Path, script) -> None:
    files = {"package.json": PACKAGE, "math.js": MATH, "test/math.test.js": TESTS}
    repo = make_repo(tmp_path / "repo", files, directives("node --test"))
    _landed(repo, script(propose=[FIX]), TASK)
    own = subprocess.run(["node", "--test"], cwd=repo, capture_output=True, text=True)
    assert own.returncode == 0, own.stdout[-2000:]


@needs_node
@pytest.mark.skipif(not (BIN / "jest").exists(), reason=f"needs jest in {RUNNERS}")
def test_the_users_jest_passes_right_after_a_run_landed_a_fix(tmp_path: Path, script) -> None:
    """Jest's haste map walks dot-folders (``.selfforge/``): it ran the kept baseline's
    old test and failed. The check itself ran Jest too: the tree it judged is found."""
    command, _, extra = FRAMEWORKS["jest"]
    text = directives(command).replace(
        "[checks]\n", '[checks]\nrunner = "junit"\njunit = "junit.xml"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(RUNNERS))}]\n"
    files = {
        "package.json": json.dumps({"name": "m", "version": "1.0.0"}),
        "math.js": MATH,
        "test/math.test.js": SPEC.format(**JEST_EXPECT),
        **extra,
    }
    repo = make_repo(tmp_path / "repo", files, text)
    _landed(repo, script(propose=[FIX]), TASK)
    own = subprocess.run([str(BIN / "jest"), "--ci"], cwd=repo, capture_output=True, text=True)
    assert own.returncode == 0, own.stderr[-2000:]
    assert "Tests:       2 passed, 2 total" in own.stderr


def test_the_users_pytest_walking_dot_folders_passes_after_a_run(tmp_path: Path, script) -> None:
    """A project whose pytest recurses into every folder (``norecursedirs = []``)
    collected the kept baseline's test_calc.py as well: an import file mismatch."""
    files = {
        "calc.py": CALC,
        "test_calc.py": TEST_CALC,
        "pytest.ini": "[pytest]\nnorecursedirs = node_modules .git\n",
    }
    repo = make_repo(tmp_path / "repo", files, directives())
    _landed(repo, script(propose=[FIX_ADD]), "Fix add() so test_add passes")
    own = subprocess.run(
        [*PYTEST.split(), "-p", "no:cacheprovider"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert own.returncode == 0, own.stdout[-2000:]
    assert "3 passed" in own.stdout


def test_the_checkout_holds_no_copy_of_the_code_after_a_run(tmp_path: Path, script) -> None:
    """`.selfforge/` keeps the journal, config, index and reports: no worktree, no
    scratch git dir, no setup checkout."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    _landed(repo, script(propose=[FIX_ADD]), "Fix add() so test_add passes")
    state = sorted(p.name for p in (repo / ".selfforge").iterdir())
    assert not {"worktrees", "tmp", "setup"} & set(state), state
    copies = [p for p in repo.rglob("calc.py") if p != repo / "calc.py"]
    assert copies == []


def _own(command: list[str], repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The user's own plain command, run in their checkout as they would, outside any sandbox.

    Colour codes are taken out of what it printed: a runner colours its summary when the
    environment asks for colour (CI sets ``FORCE_COLOR``), and ``2 passed`` then reads
    ``2 passed\x1b[39m``."""
    done = subprocess.run(
        command, cwd=repo, capture_output=True, text=True, env={**os.environ, **env}
    )
    plain = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
    done.stdout = plain.sub("", done.stdout)
    done.stderr = plain.sub("", done.stderr)
    return done


@needs_node
@pytest.mark.parametrize(
    ("framework", "command", "passed"),
    [
        pytest.param("mocha", ["mocha"], "2 passing", id="mocha"),
        pytest.param("vitest", ["vitest", "run", "--globals"], "2 passed (2)", id="vitest"),
    ],
)
def test_the_users_mocha_and_vitest_pass_right_after_a_run_landed_a_fix(
    tmp_path: Path, script, framework: str, command: list[str], passed: str
) -> None:
    """Vitest's default include is every ``**/*.test.js`` but a few named folders."""
    if not (BIN / framework).exists():
        pytest.skip(f"needs {framework} in {RUNNERS}")
    repo = js_repo(tmp_path, framework)
    _landed(repo, script(propose=[FIX]), TASK)
    own = _own([str(BIN / command[0]), *command[1:]], repo)
    assert own.returncode == 0, (own.stdout + own.stderr)[-2000:]
    assert passed in own.stdout


def test_the_users_plain_pytest_passes_right_after_a_run_landed_a_fix(
    tmp_path: Path, script
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    _landed(repo, script(propose=[FIX_ADD]), "Fix add() so test_add passes")
    own = _own([sys.executable, "-m", "pytest", "-q"], repo)
    assert own.returncode == 0, own.stdout[-2000:]
    assert "3 passed" in own.stdout


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="needs mypy")
def test_the_users_mypy_passes_right_after_a_run_landed_a_fix(tmp_path: Path, script) -> None:
    """calc.py and its test, annotated: mypy checks every body, and two modules named
    ``calc`` under the folder it walks would be an error."""

    def typed(text: str) -> str:
        return text.replace("(a, b):", "(a: int, b: int) -> int:").replace("():", "() -> None:")

    files = {"calc.py": typed(CALC), "test_calc.py": typed(TEST_CALC)}
    repo = make_repo(tmp_path / "repo", files, directives())
    _landed(repo, script(propose=[typed(FIX_ADD)]), "Fix add() so test_add passes")
    own = _own([sys.executable, "-m", "mypy", "."], repo)
    assert own.returncode == 0, own.stdout[-2000:]
    assert "Success: no issues found in 2 source files" in own.stdout


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
def test_the_users_go_test_passes_right_after_a_run_landed_a_fix(tmp_path: Path, script) -> None:
    repo = go_repo(tmp_path)
    _landed(repo, script(propose=[GO_FIX]), GO_TASK)
    # Go's caches in the test's folder: nothing read from or left in HOME.
    cache = {"GOCACHE": str(tmp_path / "gocache"), "GOPATH": str(tmp_path / "gopath")}
    own = _own(["go", "test", "./..."], repo, **cache)
    assert own.returncode == 0, (own.stdout + own.stderr)[-2000:]
    assert own.stdout.startswith("ok  \texample.com/mathx"), own.stdout


@needs_cargo
def test_the_users_cargo_test_passes_right_after_a_run_landed_a_fix(tmp_path: Path, script) -> None:
    repo = cargo_repo(tmp_path)
    _landed(repo, script(propose=[CARGO_FIX]), TASK)
    own = _own(["cargo", "test", "--offline"], repo)
    assert own.returncode == 0, own.stderr[-2000:]
    assert "test tests::adds ... ok" in own.stdout
