"""The project's history as a retrieval signal: past subjects and the latest commits."""

from __future__ import annotations

from pathlib import Path

from selfforge.context.build import map_for_task
from selfforge.context.history import Change, History, load_history, read_history

from conftest import git, make_repo

FILES = {
    "shop/__init__.py": "",
    "shop/ledger.py": "def post(amount: int) -> int:\n    return amount\n",
    "shop/menu.py": "def labels() -> list[str]:\n    return ['tea']\n",
    "shop/util.py": "def clamp(x: int) -> int:\n    return max(x, 0)\n",
}


def commit(repo: Path, path: str, text: str, subject: str) -> None:
    (repo / path).write_text(text)
    git(repo, "commit", "-qam", subject)


def chosen(repo: Path, task: str) -> list[str]:
    return map_for_task(repo, state_dir=repo / ".selfforge", token_budget=400, task=task).files


def test_a_past_subject_finds_the_file_its_commit_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    commit(repo, "shop/ledger.py", FILES["shop/ledger.py"] + "# v2\n", "Invoices: refunds total")
    for n in range(8):  # enough later work that recency alone cannot explain the pick
        commit(repo, "shop/menu.py", FILES["shop/menu.py"] + f"# {n}\n", f"Menu tweak {n}")
    # No word of the task is in any file: only the old subject links it to ledger.py.
    assert chosen(repo, "refunds on invoices show wrong totals")[0] == "shop/ledger.py"


def test_the_latest_commits_files_lead_the_newest_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    commit(repo, "shop/util.py", FILES["shop/util.py"] + "# a\n", "Tidy")
    assert chosen(repo, "speed up the slow path")[0] == "shop/util.py"
    commit(repo, "shop/menu.py", FILES["shop/menu.py"] + "# b\n", "Tidy more")
    files = chosen(repo, "speed up the slow path")
    assert files[:2] == ["shop/menu.py", "shop/util.py"]


def test_history_stops_before_the_given_commit_and_leaves_out_merges(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, "shop/menu.py", "x = 1\n", "Side work on menus")
    git(repo, "checkout", "-q", "main")
    commit(repo, "shop/util.py", "y = 2\n", "Main work on utils")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge branch side", "side")
    subjects = [c.subject for c in read_history(repo)]
    assert "Merge branch side" not in subjects
    assert {"Side work on menus", "Main work on utils", "initial"} <= set(subjects)
    before = [c.subject for c in read_history(repo, "HEAD^1^")]
    assert before == ["initial"]
    assert read_history(repo, "no-such-rev") == []


def test_a_sweep_says_less_about_each_file_than_a_focused_commit() -> None:
    history = History(
        [
            Change("cache eviction fix", ("a.py",)),
            Change("cache eviction everywhere", ("b.py", "c.py", "d.py", "e.py")),
        ]
    )
    scores = history.subject_scores("cache eviction")
    assert scores["a.py"] == 1.0
    assert 0 < scores["b.py"] < 0.5
    recent = history.recent_scores()
    assert recent["a.py"] > recent["b.py"] > 0


def test_no_words_or_no_commits_give_no_history(tmp_path: Path) -> None:
    history = History([Change("cache eviction fix", ("a.py",))])
    assert history.scores("?? !!") == {}
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert load_history(empty).scores("cache eviction") == {}


def test_the_history_follows_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    assert "shop/ledger.py" not in load_history(repo).subject_scores("refunds")
    commit(repo, "shop/ledger.py", "z = 3\n", "Refunds go through the ledger")
    assert load_history(repo).subject_scores("refunds") == {"shop/ledger.py": 1.0}
