"""A thin, strict wrapper over the git command line: every git call selfforge makes.

None of them runs a program the repository configures: hooks, fsmonitor and pagers are
off, and the environment holds no keys (a candidate could have planted a hook in a
repository that selfforge then works in).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from selfforge.errors import GitError, UsageError

# Identity for selfforge's own commits when the user has none configured.
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "selfforge",
    "GIT_AUTHOR_EMAIL": "selfforge@localhost",
    "GIT_COMMITTER_NAME": "selfforge",
    "GIT_COMMITTER_EMAIL": "selfforge@localhost",
}


# Repository-configured programs never run from selfforge's own git calls.
SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.pager=cat",
    "-c", "core.sshCommand=false",
    "-c", "protocol.ext.allow=never",
)  # fmt: skip


# Where a git hook's caller says the repository, work tree and index are (a pre-commit
# hook gets GIT_INDEX_FILE=.git/index): selfforge names its repository and worktrees by
# cwd, and with these its git calls in a worktree read or rewrote the user's index and
# HEAD instead (`git diff --cached | selfforge check -` as a pre-commit hook).
_REPOSITORY_LOCATION = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_NAMESPACE"}
)


def _run(
    args: tuple[str, ...] | list[str],
    cwd: Path,
    input_text: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    from selfforge.models.secrets import scrub_env

    exe = _git_executable()
    if exe is None:
        raise GitError("git is not installed or not on PATH; install git and retry")
    full_env = {k: v for k, v in scrub_env(os.environ).items() if k not in _REPOSITORY_LOCATION}
    full_env |= {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    full_env.update(env or {})
    return subprocess.run(
        [exe, *SAFE_CONFIG, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",  # a path or a diff line not in UTF-8 is shown, never a crash
        env=full_env,
        input=input_text,
    )


@functools.lru_cache(maxsize=1)
def _git_executable() -> str | None:
    """Looked up on PATH once per process, not once per call (dozens per attempt)."""
    return shutil.which("git")


def git(
    *args: str,
    cwd: Path,
    check: bool = True,
    input_text: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run git; return stdout. Raise GitError naming the command when it fails."""
    proc = _run(args, cwd, input_text, env)
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args)} failed: {detail[-1] if detail else proc.returncode}")
    return proc.stdout


def name_status(cwd: Path, *revs: str) -> dict[str, str]:
    """Path -> status letter of a diff (``--cached BASE``, or ``BASE COMMIT``), no renames."""
    out = git("diff", "--name-status", "--no-renames", *revs, cwd=cwd)
    changed = {}
    for line in out.splitlines():
        status, _, path = line.partition("\t")
        changed[path] = status
    return changed


def call(
    *args: str, cwd: Path, input_text: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run git; the caller reads its status and stderr (e.g. a patch that may not apply)."""
    return _run(args, cwd, input_text, env)


# Every diff selfforge makes for the gates, reviewers, prompts, the journal and the
# dashboard shows what git stores. A candidate's `.gitattributes` (`*.py -diff`, a
# `diff=driver` with a textconv or external command) must not turn a file into "Binary
# files differ" or into a driver's rendering: --text makes every file text whatever the
# attributes say, and no textconv or external diff program runs. Prefixes, colour and
# relative paths are fixed here, not by the user's diff.* settings: the gates parse it.
DIFF_OPTIONS = (
    "--no-ext-diff", "--no-textconv", "--text", "--no-color", "--no-relative",
    "--src-prefix=a/", "--dst-prefix=b/",
)  # fmt: skip


def diff(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``git diff`` with DIFF_OPTIONS (``args``: revisions, options, ``--`` paths)."""
    return git(
        "-c", "core.attributesFile=/dev/null", "diff", *DIFF_OPTIONS, *args, cwd=cwd, env=env
    )


def ok(*args: str, cwd: Path) -> bool:
    return _run(args, cwd).returncode == 0


def repo_root(path: Path) -> Path:
    """The top of the git work tree containing ``path``, or a UsageError saying so."""
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory; pass --repo with a git repository")
    out = _run(["rev-parse", "--show-toplevel"], path)
    if out.returncode != 0:
        raise UsageError(f"{path} is not inside a git repository; run `git init` there first")
    return Path(out.stdout.strip())


def head_commit(cwd: Path) -> str | None:
    out = _run(["rev-parse", "--verify", "-q", "HEAD"], cwd)
    return out.stdout.strip() or None


def current_branch(cwd: Path) -> str | None:
    """The checked-out branch name, or None on a detached HEAD."""
    out = _run(["symbolic-ref", "-q", "--short", "HEAD"], cwd)
    return out.stdout.strip() or None


def dirty_paths(cwd: Path) -> list[str]:
    """Paths with staged, unstaged or untracked (non-ignored) changes."""
    out = git("status", "--porcelain", "--untracked-files=all", cwd=cwd)
    return [line[3:] for line in out.splitlines() if line.strip()]


@dataclass(frozen=True)
class HeadState:
    branch: str | None  # None on a detached HEAD
    commit: str | None  # None before the first commit
    dirty: list[str]  # staged, unstaged or untracked (non-ignored) paths
    untracked: tuple[str, ...] = ()  # those of ``dirty`` git does not track


def head_state(cwd: Path) -> HeadState:
    """The branch, its commit and the dirty paths, from one ``git status`` (landing asks
    all three at once)."""
    out = git("status", "--porcelain=v2", "--branch", "--untracked-files=all", cwd=cwd)
    branch = commit = None
    dirty, untracked = [], []
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            commit = line[13:].strip() if line[13:].strip() != "(initial)" else None
        elif line.startswith("# branch.head "):
            branch = line[14:].strip() if line[14:].strip() != "(detached)" else None
        elif line.startswith("? "):
            dirty.append(line[2:])
            untracked.append(line[2:])
        elif line[:2] in ("1 ", "2 ", "u "):
            fields = {"1": 8, "2": 9, "u": 10}[line[0]]
            dirty.append(line.split(" ", fields)[-1].split("\t")[0])
    return HeadState(branch, commit, dirty, tuple(untracked))


def is_clean(cwd: Path) -> bool:
    """No staged, unstaged or untracked (non-ignored) changes."""
    return not dirty_paths(cwd)


def identity_env(cwd: Path) -> dict[str, str]:
    """Environment for selfforge's commits: selfforge's identity for each field (author
    and committer, name and email) that neither the environment (GIT_AUTHOR_NAME, EMAIL,
    ...) nor git's configuration (user.*, author.*, committer.*) gives, so that a
    machine with none (a fresh CI container, a new user) can commit, and an identity
    given only in the environment (as CI jobs do) is kept, not overwritten. A repository
    whose configuration gives every field is not asked again in this process."""
    common = common_dir(cwd)
    if common in _HAS_IDENTITY:
        return {}
    pattern = r"^(user|author|committer)\.(name|email)$"
    found = _run(["config", "--get-regexp", pattern], cwd).stdout.split("\n")
    configured = {line.split(" ", 1)[0] for line in found if line.strip()}
    missing, unconfigured = {}, False
    for variable, fallback in _FALLBACK_IDENTITY.items():
        role, field = variable.lower().split("_")[1:]  # GIT_AUTHOR_NAME -> author, name
        if {f"user.{field}", f"{role}.{field}"} & configured:
            continue
        unconfigured = True
        if not os.environ.get(variable) and not (field == "email" and os.environ.get("EMAIL")):
            missing[variable] = fallback
    if not unconfigured:
        _HAS_IDENTITY.add(common)  # the configuration stays; the environment may not
    return missing


_HAS_IDENTITY: set[Path] = set()


def commit_index(cwd: Path, parent: str, message: str) -> str:
    """A commit of exactly what is staged in ``cwd``, on top of ``parent``; HEAD stays.

    Made before any check runs, so what lands is exactly what was checked.
    """
    tree = git("write-tree", cwd=cwd).strip()
    commit = git(
        "commit-tree", tree, "-p", parent, "-m", message, cwd=cwd, env=identity_env(cwd)
    ).strip()
    return remember_tree(commit, tree)


def remember_tree(commit: str, tree: str) -> str:
    """``commit``, just made from ``tree`` by commit-tree: ``tree_of`` need not ask git."""
    if is_commit_id(commit):
        _TREES[commit] = tree
    return commit


def is_commit_id(text: str) -> bool:
    """A full object id (SHA-1 or SHA-256): it names one commit for good, so what is
    known of it may be kept; a branch name or ``HEAD`` may not."""
    return re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", text) is not None


_TREES: dict[str, str] = {}


def tree_of(cwd: Path, commit: str) -> str:
    """The tree of ``commit``; asked of git once per commit id in a process (a full id
    names one commit in every repository: its tree never changes)."""
    if (known := _TREES.get(commit)) is not None:
        return known
    tree = git("rev-parse", f"{commit}^{{tree}}", cwd=cwd).strip()
    remember_tree(commit, tree)
    return tree


@functools.lru_cache(maxsize=64)
def common_dir(cwd: Path) -> Path:
    """The git directory ``cwd``'s repository shares with its worktrees (asked once per
    path in a process: it does not change while selfforge works there)."""
    out = git("rev-parse", "--git-common-dir", cwd=cwd).strip()
    path = Path(out)
    return path if path.is_absolute() else (cwd / path).resolve()
