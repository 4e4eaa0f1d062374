"""A thin, strict wrapper over the git command line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from selfforge.errors import GitError, UsageError

# Identity for selfforge's own commits when the user has none configured.
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "selfforge",
    "GIT_AUTHOR_EMAIL": "selfforge@localhost",
    "GIT_COMMITTER_NAME": "selfforge",
    "GIT_COMMITTER_EMAIL": "selfforge@localhost",
}


def git(
    *args: str,
    cwd: Path,
    check: bool = True,
    input_text: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run git; return stdout. Raise GitError naming the command when it fails."""
    if shutil.which("git") is None:
        raise GitError("git is not installed or not on PATH; install git and retry")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        input=input_text,
    )
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args)} failed: {detail[-1] if detail else proc.returncode}")
    return proc.stdout


def ok(*args: str, cwd: Path) -> bool:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True).returncode == 0


def repo_root(path: Path) -> Path:
    """The top of the git work tree containing ``path``, or a UsageError saying so."""
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory; pass --repo with a git repository")
    out = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise UsageError(f"{path} is not inside a git repository; run `git init` there first")
    return Path(out.stdout.strip())


def head_commit(cwd: Path) -> str | None:
    out = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=cwd, capture_output=True, text=True
    )
    return out.stdout.strip() or None


def current_branch(cwd: Path) -> str | None:
    """The checked-out branch name, or None on a detached HEAD."""
    out = subprocess.run(
        ["git", "symbolic-ref", "-q", "--short", "HEAD"], cwd=cwd, capture_output=True, text=True
    )
    return out.stdout.strip() or None


def dirty_paths(cwd: Path) -> list[str]:
    """Paths with staged, unstaged or untracked (non-ignored) changes."""
    out = git("status", "--porcelain", "--untracked-files=all", cwd=cwd)
    return [line[3:] for line in out.splitlines() if line.strip()]


def is_clean(cwd: Path) -> bool:
    """No staged, unstaged or untracked (non-ignored) changes."""
    return not dirty_paths(cwd)


def identity_env(cwd: Path) -> dict[str, str]:
    """Environment for commits: the user's identity if set, else selfforge's."""
    env: dict[str, str] = {}
    has_name = ok("config", "user.name", cwd=cwd)
    has_email = ok("config", "user.email", cwd=cwd)
    if not (has_name and has_email):
        env.update(_FALLBACK_IDENTITY)
    return env


def commit_staged(cwd: Path, message: str) -> str:
    """Commit what is staged in ``cwd`` (a selfforge worktree), exactly that; return the sha.

    Not ``add -A``: files the checks wrote since the change was staged are no part of it.
    """
    git("commit", "-q", "--no-verify", "-m", message, cwd=cwd, env=identity_env(cwd))
    return git("rev-parse", "HEAD", cwd=cwd).strip()


def common_dir(cwd: Path) -> Path:
    out = git("rev-parse", "--git-common-dir", cwd=cwd).strip()
    path = Path(out)
    return path if path.is_absolute() else (cwd / path).resolve()
