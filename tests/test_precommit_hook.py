"""The `selfforge-check` hook of .pre-commit-hooks.yaml, through the real pre-commit
framework (`pre-commit try-repo`: it installs this repository into a virtualenv of its
own, as a team's `.pre-commit-config.yaml` would): the staged change at pre-commit, the
pushed range at pre-push; a cheat refused, a fix accepted. And `check --staged` as a
plain git hook, where git stages into an index of its own (`commit -a`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, IDENTITY, TEST_CALC, built_once, directives, git, make_repo

SELFFORGE = Path(__file__).resolve().parents[1]
FIXED = CALC.replace("return a - b", "return a + b", 1)
# The cheat: sub() broken, and test_sub weakened so that the change's own tests pass.
CHEAT = {
    "calc.py": CALC.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a"),
    "test_calc.py": TEST_CALC.replace("assert sub(5, 3) == 2", "assert sub(5, 3) in (2, 5)"),
}


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hook environment for the whole run: pre-commit installs selfforge into it once
    (its store locks itself, so xdist's workers share it)."""
    return built_once(tmp_path_factory, "pre-commit-home", lambda place: None)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def _stage(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", *files)


def _try_repo(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **IDENTITY, "PRE_COMMIT_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(SELFFORGE), "selfforge-check",
         "--verbose", *args],
        cwd=repo, capture_output=True, text=True, env=env,
    )  # fmt: skip


# A declared measure (issue 42.5): the hook shows how the staged change moves it.
SIZE = '\n[[measures]]\nname = "size"\nkind = "size"\nfile = "calc.py"\non_worse = "report"\n'


def test_the_hook_refuses_a_staged_cheat_and_passes_a_staged_fix(
    repo: Path, pre_commit_home: Path
) -> None:
    """The cheat refused; the fix (a comment line longer) accepted, and the hook's
    output shows the measures: calc.py's size, worse, only reported."""
    (repo / "selfforge.toml").write_text((repo / "selfforge.toml").read_text() + SIZE)
    git(repo, "commit", "-qam", "a size measure")
    _stage(repo, CHEAT)
    refused = _try_repo(repo, pre_commit_home)
    out = refused.stdout + refused.stderr
    assert refused.returncode == 1, out
    assert "rejected" in out and "test_sub" in out, out
    git(repo, "reset", "-q", "--hard")
    _stage(repo, {"calc.py": FIXED + "# add() adds\n"})
    passed = _try_repo(repo, pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "accepted" in passed.stdout, passed.stdout
    assert "measures:" in passed.stdout, passed.stdout
    assert f"size: {len(CALC)} bytes → {len(FIXED) + 13} bytes" in passed.stdout
    assert ": worse" in passed.stdout.split("measures:")[1], passed.stdout
    assert git(repo, "status", "--porcelain") == "M  calc.py\n"  # the index is as it was


def test_the_hook_judges_the_pushed_range_at_pre_push(repo: Path, pre_commit_home: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    _stage(repo, CHEAT)
    git(repo, "commit", "-qm", "Simplify sub")
    cheat = git(repo, "rev-parse", "HEAD").strip()
    refused = _try_repo(
        repo, pre_commit_home, "--hook-stage", "pre-push", "--from-ref", base, "--to-ref", cheat
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "test_sub" in refused.stdout, refused.stdout
    git(repo, "reset", "-q", "--hard", base)
    _stage(repo, {"calc.py": FIXED})
    git(repo, "commit", "-qm", "Fix add()")
    fix = git(repo, "rev-parse", "HEAD").strip()
    passed = _try_repo(
        repo, pre_commit_home, "--hook-stage", "pre-push", "--from-ref", base, "--to-ref", fix
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
    # the range was judged, not the (empty) index
    assert "accepted: all gates passed" in passed.stdout, passed.stdout


def test_check_staged_in_a_git_hook_reads_the_index_git_commits(repo: Path) -> None:
    """`git commit -a` stages into an index of its own and names it in GIT_INDEX_FILE:
    that is the change being committed, not what .git/index holds."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m selfforge check --staged\n')
    hook.chmod(0o755)
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CHEAT["calc.py"])  # not staged: commit -a stages it
    refused = subprocess.run(
        ["git", "commit", "-aqm", "Simplify sub"],
        cwd=repo, capture_output=True, text=True, env={**os.environ, **IDENTITY},
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "test_sub" in refused.stdout + refused.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == head
    (repo / "calc.py").write_text(FIXED)
    made = subprocess.run(
        ["git", "commit", "-aqm", "Fix add()"],
        cwd=repo, capture_output=True, text=True, env={**os.environ, **IDENTITY},
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    assert git(repo, "rev-parse", "HEAD~1").strip() == head


def test_check_staged_with_nothing_staged_passes(repo: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--staged", "--repo", str(repo)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing is staged" in proc.stdout


def test_the_guides_local_system_hook_refuses_a_cheat(repo: Path, tmp_path: Path) -> None:
    """docs/guides/ci-gate.md's `repo: local` hook, for a selfforge already installed."""
    guide = (SELFFORGE / "docs" / "guides" / "ci-gate.md").read_text()
    block = re.search(r"```yaml\n(repos:\n  - repo: local\n.*?)```", guide, re.S)
    assert block, "the guide's local hook"
    (repo / ".pre-commit-config.yaml").write_text(block[1])
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-qm", "pre-commit")
    _stage(repo, CHEAT)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, **IDENTITY, "PRE_COMMIT_HOME": str(tmp_path / "pch"), "PATH": path}
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--verbose"],
        cwd=repo, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert proc.returncode == 1 and "test_sub" in proc.stdout, proc.stdout + proc.stderr
