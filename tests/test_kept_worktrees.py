"""A run keeps its baseline's and attempt's worktrees for the next run: checking out a new
commit there rewrites only the files that differ (a fresh checkout writes every file, most
of a small run's time on a repository of a thousand files). What the last run, a killed
one or a person left in them never reaches a check, and a broken one is made again."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import (
    CALC,
    FIX_ADD,
    TEST_CALC,
    cli,
    directives,
    git,
    left_worktrees,
    log_json,
    make_repo,
    trees_dir,
)

ADD_DIV = """calc.py
<<<<<<< SEARCH
def mul(a, b):
    return a * b
=======
def mul(a, b):
    return a * b


def div(a, b):
    return a / b
>>>>>>> REPLACE
"""

# Left in a worktree, either breaks every check that would see it.
POISON_CONFTEST = 'raise RuntimeError("left in the worktree by an earlier run")\n'
BROKEN_MUL = CALC.replace("return a * b", "return a + b")


def _first_run(tmp_path: Path, script) -> Path:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    first = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]))
    assert first.returncode == 0, first.stderr
    assert "return a + b" in (repo / "calc.py").read_text()
    assert left_worktrees(repo) == (["attempt", "baseline"], 2)
    return repo


def _user_commits(repo: Path) -> None:
    """The user's own commit between runs: the next run measures a new baseline."""
    (repo / "NOTES.md").write_text("notes\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "notes")


def _second_run(repo: Path, script) -> str:
    second = cli("run", "--repo", str(repo), "--model", script(propose=[ADD_DIV]))
    assert second.returncode == 0, second.stderr + second.stdout
    last = log_json(repo)[-1]
    assert (last["outcome"], last["landed"]) == ("accepted", True), last
    assert "def div(a, b):" in (repo / "calc.py").read_text()  # judged, passed, landed
    assert git(repo, "status", "--porcelain") == ""
    return second.stdout


def test_the_next_run_reuses_the_kept_worktrees_and_sees_nothing_left_in_them(
    tmp_path: Path, script
) -> None:
    repo = _first_run(tmp_path, script)
    kept = trees_dir(repo) / "worktrees"
    status = cli("status", "--repo", str(repo), check=True).stdout
    assert "stopped without cleaning up" not in status  # kept worktrees are no leftover
    unchanged = (kept / "attempt" / "test_calc.py").stat()
    for slot in ("attempt", "baseline"):  # what a person or an earlier check left there
        (kept / slot / "conftest.py").write_text(POISON_CONFTEST)
        (kept / slot / "calc.py").write_text(BROKEN_MUL)
    _user_commits(repo)

    out = _second_run(repo, script)

    assert "recovered" not in out
    again = (kept / "attempt" / "test_calc.py").stat()
    # Reused, not made again: a file no commit changed was not rewritten.
    assert (again.st_ino, again.st_mtime_ns) == (unchanged.st_ino, unchanged.st_mtime_ns)
    for slot in ("attempt", "baseline"):
        assert not (kept / slot / "conftest.py").exists()
    assert left_worktrees(repo) == (["attempt", "baseline"], 2)


def test_a_broken_or_deleted_kept_worktree_is_made_again(tmp_path: Path, script) -> None:
    repo = _first_run(tmp_path, script)
    admin = repo / ".git" / "worktrees"
    (admin / "attempt" / "index.lock").write_text("")  # a git process killed in it
    shutil.rmtree(trees_dir(repo) / "worktrees" / "baseline")  # deleted by hand
    _user_commits(repo)

    _second_run(repo, script)

    assert left_worktrees(repo) == (["attempt", "baseline"], 2)  # made again, none doubled
    assert sorted(p.name for p in admin.iterdir()) == ["attempt", "baseline"]


def test_clean_removes_the_kept_worktrees_and_says_so(tmp_path: Path, script) -> None:
    repo = _first_run(tmp_path, script)
    listed = cli("clean", "--dry-run", "--repo", str(repo), check=True).stdout
    for slot in ("attempt", "baseline"):
        kept = trees_dir(repo) / "worktrees" / slot
        assert f"would remove worktree {kept} (kept for the next run)" in listed
    assert left_worktrees(repo) == (["attempt", "baseline"], 2)  # a dry run removes nothing
    cli("clean", "--repo", str(repo), check=True)
    assert left_worktrees(repo) == ([], 0)
    _user_commits(repo)
    _second_run(repo, script)  # and the next run makes them again


def test_a_copied_repository_never_works_in_the_original_s_kept_worktrees(
    tmp_path: Path, script
) -> None:
    """A repository copied with its .selfforge (cp -r, a backup restored) holds worktrees
    whose git admin folders are the original's: the copy's run makes its own."""
    original = _first_run(tmp_path, script)
    admin = original / ".git" / "worktrees"
    before = {p.name: (p / "HEAD").read_text() for p in admin.iterdir()}
    listed = git(original, "worktree", "list")
    copy = tmp_path / "copy"
    shutil.copytree(original, copy, symlinks=True)

    _second_run(copy, script)  # its commits are made in the copy's git, and land there

    assert {p.name: (p / "HEAD").read_text() for p in admin.iterdir()} == before
    assert git(original, "worktree", "list") == listed
    for slot in ("attempt", "baseline"):  # the copy's worktrees belong to the copy's git
        text = (trees_dir(copy) / "worktrees" / slot / ".git").read_text()
        assert str(copy / ".git" / "worktrees") in text


def test_the_gate_for_other_agents_keeps_its_worktree_too(tmp_path: Path) -> None:
    """`selfforge check` on each change an agent makes: the next check resets the kept
    worktree instead of writing every file again."""
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    kept = trees_dir(repo) / "worktrees"
    fixed = CALC.replace("return a - b", "return a + b", 1)
    for n, text in enumerate((fixed, fixed + "\n\ndef div(a, b):\n    return a / b\n")):
        (repo / "calc.py").write_text(text)
        git(repo, "commit", "-qam", f"change {n}")
        checked = cli("check", "--repo", str(repo), "HEAD")
        # the second change adds div(), which no test runs: needs review
        assert checked.returncode == (0, 3)[n], checked.stdout + checked.stderr
        if n == 0:
            unchanged = (kept / "check" / "test_calc.py").stat()
    again = (kept / "check" / "test_calc.py").stat()
    assert (again.st_ino, again.st_mtime_ns) == (unchanged.st_ino, unchanged.st_mtime_ns)
    assert left_worktrees(repo) == (["baseline", "check"], 2)
