"""No environment assumptions (#33): on a machine with no git identity (a fresh CI
container, a new user: empty HOME, no global or system config, no GIT_AUTHOR_* or
GIT_COMMITTER_*), a patch of every common shape is judged and lands, through the CLI and
through the MCP server. The repository itself has no identity configured either."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, directives, git

FIXED = CALC.replace("return a - b", "return a + b", 1)
NEW_TEST = "from calc import add\n\n\ndef test_add_again():\n    assert add(1, 1) == 2\n"
SHAPES = ["git-diff", "git-diff-cached", "format-patch", "diff-u", "git-diff-no-prefix"]
NEW = "more/test_more.py"  # in a folder: a patch without prefixes must keep it there


def _stranger_env(home: Path) -> dict[str, str]:
    """The environment of someone with no git identity anywhere."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_CONFIG")) and k != "EMAIL"
    }
    home.mkdir(exist_ok=True)
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "COLUMNS": "200"}
    return env | {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with no user.name or user.email in its config (its first commit's
    identity came from the environment of whoever made it)."""
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TEST_CALC)
    (root / "selfforge.toml").write_text(directives())
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    assert "user." not in git(root, "config", "--local", "--list")
    return root


def _patch(repo: Path, shape: str) -> str:
    """The fix (add() repaired, one new test file) as ``shape``; the working tree is left
    as HEAD has it."""
    if shape == "format-patch":
        git(repo, "checkout", "-qb", "feature")
        (repo / "calc.py").write_text(FIXED)
        _write_new_test(repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "Fix add()\n\nQuoting a diff:\ndiff --git a/x b/x\n--- a/x")
        text = git(repo, "format-patch", "-1", "--stdout")
        git(repo, "checkout", "-q", "main")
        return text
    if shape == "diff-u":  # GNU diff: no a/ b/ prefixes, no git header
        (repo / "calc.py.orig").write_text(CALC)
        (repo / "calc.py").write_text(FIXED)
        _write_new_test(repo)
        proc = subprocess.run(
            f"diff -u calc.py.orig calc.py; diff -uN {NEW}.none {NEW}",
            shell=True, cwd=repo, capture_output=True, text=True,
        )  # fmt: skip
        (repo / "calc.py.orig").unlink()
        text = proc.stdout
    else:
        (repo / "calc.py").write_text(FIXED)
        _write_new_test(repo)
        if shape.startswith("git-diff") and shape != "git-diff-cached":
            git(repo, "add", "-N", NEW)  # a new file shows in `git diff`
            text = git(repo, "diff", *(["--no-prefix"] if "no-prefix" in shape else []))
        else:
            git(repo, "add", "-A")
            text = git(repo, "diff", "--cached")
    git(repo, "reset", "-q")
    git(repo, "checkout", "-q", "--", "calc.py")
    shutil.rmtree(repo / "more")
    return text


def _write_new_test(repo: Path) -> None:
    (repo / NEW).parent.mkdir()
    (repo / NEW).write_text(NEW_TEST)


def _check(repo: Path, patch: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), "-", *args],
        input=patch,
        capture_output=True,
        text=True,
        env=_stranger_env(repo.parent / "home"),
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_of_patch_is_judged_with_no_git_identity(repo: Path, shape: str) -> None:
    patch = _patch(repo, shape)
    first = _check(repo, patch, "--json")
    assert first.returncode == 0, first.stdout + first.stderr
    verdict = json.loads(first.stdout)
    assert verdict["verdict"] == "accepted"
    assert verdict["changed"] == {"calc.py": "M", NEW: "A"}
    again = _check(repo, patch)  # the kept worktree of the first check is reset
    assert again.returncode == 0, again.stdout + again.stderr
    assert git(repo, "status", "--porcelain") == ""  # the user's tree is left alone


def test_a_regression_in_a_patch_is_rejected_with_no_git_identity(repo: Path) -> None:
    (repo / "calc.py").write_text(FIXED.replace("a * b", "a + b"))
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", "calc.py")
    proc = _check(repo, patch)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "test_mul" in proc.stdout


def test_land_of_a_patch_commits_with_no_git_identity(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    proc = _check(repo, _patch(repo, "git-diff"), "--land")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    assert (repo / "calc.py").read_text() == FIXED and (repo / NEW).is_file()
    assert git(repo, "status", "--porcelain") == ""


def test_the_mcp_check_tool_judges_a_patch_with_no_git_identity(repo: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    patch = _patch(repo, "git-diff")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "selfforge", "mcp", "--repo", str(repo)],
        env=_stranger_env(repo.parent / "home"),
    )

    async def calls() -> list[object]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            # twice: the server's second check reuses the first one's worktree
            return [await session.call_tool("check", {"patch": patch}) for _ in range(2)]

    for result in anyio.run(calls):
        assert not result.isError, result
        structured = result.structuredContent or json.loads(result.content[0].text)
        verdict = structured.get("result", structured)
        assert verdict["verdict"] == "accepted", verdict


def test_an_identity_given_only_in_the_environment_is_the_landed_commits(repo: Path) -> None:
    """CI jobs name the author in GIT_AUTHOR_* / EMAIL, not in a config file: selfforge's
    own identity fills only what nothing gives, so that one is kept."""
    patch = _patch(repo, "git-diff")
    env = _stranger_env(repo.parent / "home")
    env |= {"GIT_AUTHOR_NAME": "CI Bot", "GIT_AUTHOR_EMAIL": "ci@example.com"}
    env |= {"GIT_COMMITTER_NAME": "CI Bot", "EMAIL": "committer@example.com"}
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), "-", "--land"],
        input=patch, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    who = git(repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>")
    assert who.strip() == "CI Bot <ci@example.com> / CI Bot <committer@example.com>"


def test_a_pre_commit_hook_judges_the_staged_change_and_leaves_the_index(repo: Path) -> None:
    """In a hook git sets GIT_INDEX_FILE (relative: .git/index): selfforge's own git calls
    in its worktrees must not take the user's index for theirs (the check could not even
    start, and with an absolute path it rewrote the user's index and HEAD)."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\ngit diff --cached | "{sys.executable}" -m selfforge check -\n')
    hook.chmod(0o755)
    head = git(repo, "rev-parse", "HEAD").strip()

    def commit(text: str) -> subprocess.CompletedProcess[str]:
        (repo / "calc.py").write_text(text)
        git(repo, "add", "calc.py")
        return subprocess.run(
            ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com",
             "commit", "-qm", "Change calc"],
            cwd=repo, capture_output=True, text=True, env=_stranger_env(repo.parent / "home"),
        )  # fmt: skip

    refused = commit(FIXED.replace("a * b", "a + b"))
    assert refused.returncode != 0 and "test_mul" in refused.stdout + refused.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "status", "--porcelain") == "M  calc.py\n"  # still staged, as it was
    made = commit(FIXED)
    assert made.returncode == 0, made.stdout + made.stderr
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    assert git(repo, "status", "--porcelain") == ""
