"""A Go check's lint and tests at once, on two cores, instead of one after the other.

``go vet`` and ``go test`` each start the toolchain and compile what the change touched;
run in turn, the lint's time is added to every check's. When two jobs may run
(``SELFFORGE_JOBS``, else the cores) and the test command is ``go test``, the lint stage
starts the judged commit's full test run in a thread (suite_runs.RunAhead: the tests stage
takes it, journaled with its own start) and runs the lint meanwhile in a checkout of its
own, beside the candidate's worktree: the tests write into the worktree while they run,
and a candidate's code run by its tests must not change what the lint reads. That
checkout is made from git's objects, which no check can write, and is a worktree (a
lint that calls git works). The verdict is the sequential one: a failing lint cancels
the run ahead, and the tests stage judges the run it takes as it would judge its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.errors import GitError
from selfforge.judge import contract
from selfforge.judge.runners import registry
from selfforge.judge.sandbox.command import CommandResult, run_command
from selfforge.judge.sandbox.limits import jobs
from selfforge.judge.suite_runs import RunAhead, run_check
from selfforge.repo import git
from selfforge.repo.treefiles import remove_special_files

if TYPE_CHECKING:
    from selfforge.judge.candidate import Candidate, Judge

LINT_SUFFIX = "-lint"  # the lint's checkout: the candidate's worktree's name + this


def tests_alongside(c: Candidate, j: Judge) -> RunAhead | None:
    """The judged commit's full test run, started now beside the lint; None where the
    lint runs first as before (one job, no test command, a runner other than go test)."""
    command = j.directives.checks.test
    if not command or j.space.git_common_dir is None or jobs() < 2:
        return None
    if not registry.for_space(j.space, command, c.tree).lint_beside_tests:
        return None
    judged = contract.judged_commit(c.tree, c.base, c.commit, c.changed, j.rule)
    timeout = j.directives.checks.timeout_s
    return RunAhead(c.tree, judged.commit, c.commit, command, timeout, j.space)


def run_lint(c: Candidate, j: Judge, command: str, *, beside_tests: bool) -> CommandResult:
    """The lint on the candidate's worktree, or, while its tests run there, on a checkout
    of its own."""
    if not beside_tests:
        return run_check(c, j, "lint", command)
    j.record.begin("lint")
    assert j.space.git_common_dir is not None  # tests_alongside starts nothing without
    tree = lint_tree(c.tree, c.commit, j.space.git_common_dir)
    timeout = j.directives.checks.timeout_s
    return run_command(command, tree, timeout, j.space, on_start=j.record.on_start, head=c.commit)


def lint_tree(tree: Path, commit: str, common: Path) -> Path:
    """A worktree at ``commit`` beside ``tree`` for the lint: reset when it is there
    (only the files that differ are written), else added. ``common``: the repository's
    git dir, whose worktree it must be (git is never run where a .git file points
    elsewhere)."""
    path = tree.parent / (tree.name + LINT_SUFFIX)
    if _worktree_of(path, common):
        try:
            git.git("checkout", "-q", "-f", "--detach", commit, cwd=path)
            git.git("clean", "-q", "-ffdx", cwd=path)
            remove_special_files(path)
            return path
        except GitError:
            pass  # a killed git's lock, a file a lint made unremovable: made afresh
    shutil.rmtree(path, ignore_errors=True)
    git.git("worktree", "add", "-q", "-f", "--detach", str(path), commit, cwd=tree)
    return path


def _worktree_of(path: Path, common: Path) -> bool:
    try:
        text = (path / ".git").read_text(errors="replace").strip()
    except OSError:
        return False
    admin = Path(text.removeprefix("gitdir:").strip())
    admin = admin if admin.is_absolute() else path / admin
    return text.startswith("gitdir:") and admin.resolve().parent == (common / "worktrees").resolve()
