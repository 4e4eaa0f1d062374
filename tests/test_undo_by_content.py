"""`selfforge undo` finds selfforge's change by content, however it reached the branch:
merged by hand from its `selfforge/…` branch, rebased or cherry-picked (trailer), or with
its message rewritten too (same patch)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, log_json, make_repo


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("undo")
    repo = make_repo(
        tmp / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(land="branch")
    )
    (tmp / "script.json").write_text(json.dumps({"propose": [FIX_ADD]}))
    cli("run", "--repo", str(repo), "--model", f"script:{tmp / 'script.json'}", check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["branch"]
    (repo / "NOTES.md").write_text("notes\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "Add notes")
    return repo, attempt["branch"]


@pytest.fixture
def kept_on_branch(_built: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """An accepted change kept on a branch, and an unrelated commit on main since (each
    test undoes in its own copy of the repository and its journal)."""
    repo, branch = _built
    return shutil.copytree(repo, tmp_path / "r", symlinks=True), branch


def _undo(repo: Path) -> str:
    proc = cli("undo", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    assert "return a - b" in (repo / "calc.py").read_text()  # the change is gone
    assert (repo / "NOTES.md").exists()  # and nothing else
    assert git(repo, "status", "--porcelain") == ""
    [attempt] = log_json(repo)
    assert attempt["reverted_by"] == git(repo, "rev-parse", "HEAD").strip()
    return proc.stdout


def test_undo_a_branch_the_user_merged(kept_on_branch: tuple[Path, str]) -> None:
    repo, branch = kept_on_branch
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge selfforge's fix", branch)
    assert "reverted attempt 1" in _undo(repo)


def test_undo_a_change_rebased_by_hand(kept_on_branch: tuple[Path, str]) -> None:
    repo, branch = kept_on_branch
    git(repo, "cherry-pick", branch)  # a new commit, same message: found by its trailer
    assert git(repo, "rev-parse", "HEAD") != git(repo, "rev-parse", branch)
    _undo(repo)


def test_undo_a_change_whose_message_was_rewritten(kept_on_branch: tuple[Path, str]) -> None:
    repo, branch = kept_on_branch
    git(repo, "cherry-pick", branch)
    git(repo, "commit", "-q", "--amend", "-m", "Fix add (my own words)")
    _undo(repo)  # found by its patch


def test_undo_a_squash_merge(kept_on_branch: tuple[Path, str]) -> None:
    repo, branch = kept_on_branch
    git(repo, "merge", "-q", "--squash", branch)
    git(repo, "commit", "-q", "--no-edit")
    _undo(repo)


def test_a_change_never_merged_is_not_undone(kept_on_branch: tuple[Path, str]) -> None:
    repo, _ = kept_on_branch
    head = git(repo, "rev-parse", "HEAD")
    proc = cli("undo", "--repo", str(repo))
    assert proc.returncode == 1 and "nothing to undo" in proc.stderr
    assert git(repo, "rev-parse", "HEAD") == head
