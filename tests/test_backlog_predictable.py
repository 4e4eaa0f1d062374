"""A predictable backlog: --task work is this run's only, repeating it runs it again, tasks
are not listed twice, `plan` shows what is open, and lessons of undone changes say so."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from selfforge.journal.store import Journal

from conftest import FIX_ADD, cli, log_json

TASK = "Make sub() handle floats"


def _plan(repo: Path, *flags: str) -> list[dict[str, object]]:
    return json.loads(cli("plan", "--json", "--repo", str(repo), *flags, check=True).stdout)


def test_a_task_given_with_task_is_not_left_for_later_runs(
    calc_repo: Path, script: Callable[..., str]
) -> None:
    cli("run", "--repo", str(calc_repo), "--task", TASK, "--model", script(), check=True)
    assert [t["text"] for t in _plan(calc_repo)] == []  # nothing open for a later run
    [row] = [t for t in _plan(calc_repo, "--all") if t["text"] == TASK]
    assert row["status"] == "dropped" and "--task" in str(row["note"])

    # A plain run works on the directives' goal, never on the earlier --task text.
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    assert [a["task"] for a in log_json(calc_repo)] == [TASK, "Fix add() so test_add passes"]


def test_the_same_task_given_again_runs_again(calc_repo: Path, script: Callable[..., str]) -> None:
    for _ in range(2):
        proc = cli("run", "--repo", str(calc_repo), "--task", TASK, "--model", script())
        assert proc.returncode == 0, proc.stderr
        assert "planner" not in proc.stdout
    assert [a["task"] for a in log_json(calc_repo)] == [TASK, TASK]


def test_tasks_are_listed_once_and_plan_shows_the_open_ones(calc_repo: Path) -> None:
    for text in ("Add docstrings", "add docstrings.", "Speed up mul()"):
        cli("plan", "add", text, "--repo", str(calc_repo), check=True)
    shown = _plan(calc_repo)
    assert [t["text"] for t in shown] == ["Add docstrings", "Speed up mul()"]
    cli("plan", "drop", str(shown[1]["id"]), "--repo", str(calc_repo), check=True)
    assert [t["text"] for t in _plan(calc_repo)] == ["Add docstrings"]
    assert len(_plan(calc_repo, "--all")) == 2
    text = cli("plan", "--repo", str(calc_repo), check=True).stdout
    assert "Speed up mul()" not in text and "1 closed" in text and "--all" in text


def test_the_lesson_of_an_undone_change_says_it_was_undone(
    calc_repo: Path, script: Callable[..., str]
) -> None:
    fix = "Fix add() so test_add passes"
    cli("run", "--repo", str(calc_repo), "--task", fix, "--model", script(propose=[FIX_ADD]))
    cli("undo", "--repo", str(calc_repo), check=True)
    cli("run", "--repo", str(calc_repo), "--task", fix, "--model", script(), check=True)
    last = log_json(calc_repo)[-1]
    with Journal(calc_repo / ".selfforge" / "journal.db") as journal:
        [propose] = [c for c in journal.calls(int(last["id"])) if c["role"] == "propose"]
    assert "accepted but later undone" in propose["prompt"]
