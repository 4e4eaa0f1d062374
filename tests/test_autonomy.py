"""Multi-cycle scripted runs: planning, diagnosis, stalls, limits and memory."""

from __future__ import annotations

import json
from pathlib import Path

from selfforge.journal.store import Journal

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    TEST_CALC,
    cli,
    directives,
    git,
    log_json,
    make_repo,
)

MUL_DOC = '''calc.py
<<<<<<< SEARCH
def mul(a, b):
    return a * b
=======
def mul(a, b):
    """The product of a and b."""
    return a * b
>>>>>>> REPLACE
'''

MISPLACED = "calc.py\n<<<<<<< SEARCH\ndef add(x, y):\n=======\ndef add(a, b):\n>>>>>>> REPLACE\n"
WHOLE_FILE_FIX = "calc.py\n```python\n" + CALC.replace("return a - b", "return a + b", 1) + "```\n"


def _repo(tmp_path: Path, **kw: object) -> Path:
    return make_repo(
        tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(**kw)
    )  # type: ignore[arg-type]


def _calls(repo: Path, attempt_id: int, role: str) -> list[dict]:
    with Journal(repo / ".selfforge" / "journal.db") as journal:
        return [c for c in journal.calls(attempt_id) if c["role"] == role]


def test_a_plan_of_several_tasks_lands_each(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=2)
    spec = script(
        plan=["1. Fix add() in calc.py\n2. Document mul() in calc.py"], propose=[FIX_ADD, MUL_DOC]
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    attempts = log_json(repo)
    assert [a["task"] for a in attempts] == ["Fix add() in calc.py", "Document mul() in calc.py"]
    assert [a["outcome"] for a in attempts] == ["accepted", "accepted"]
    assert git(repo, "rev-list", "--count", f"{head}..HEAD").strip() == "2"
    backlog = json.loads(cli("plan", "--json", "--all", "--repo", str(repo), check=True).stdout)
    assert {t["status"] for t in backlog} == {"done"}


def test_a_diagnosed_retry_lands(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=3)
    better = "Change only add() in calc.py to return a + b; leave sub() alone"
    spec = script(propose=[FIX_ADD_BREAK_SUB, FIX_ADD_BREAK_SUB, FIX_ADD], diagnose=[better])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    attempts = log_json(repo)
    assert [a["outcome"] for a in attempts] == ["rejected", "rejected", "accepted"]
    assert attempts[2]["task"] == better
    diagnosis = _calls(repo, attempts[1]["id"], "diagnose")
    assert diagnosis and "test_sub" in diagnosis[0]["prompt"]  # it read the failure reports


def test_a_stalled_task_is_skipped_with_a_reason_and_the_run_ends(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=6)
    spec = script(propose=[FIX_ADD_BREAK_SUB] * 6)
    proc = cli("run", "--repo", str(repo), "--model", spec, check=True)
    assert [a["outcome"] for a in log_json(repo)] == ["rejected"] * 3
    assert "backlog is empty" in proc.stdout
    [task] = json.loads(cli("plan", "--json", "--all", "--repo", str(repo), check=True).stdout)
    assert task["status"] == "skipped"
    assert "skipped after 3 attempt(s)" in task["note"] and "test_sub" in task["note"]


def test_edits_that_keep_missing_switch_to_whole_files(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=2)
    spec = script(propose=[MISPLACED, WHOLE_FILE_FIX])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    attempts = log_json(repo)
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted"]
    [second] = _calls(repo, attempts[1]["id"], "propose")
    assert "<<<<<<< SEARCH" not in second["prompt"].split("## How to reply")[-1]


def test_a_lesson_from_a_failure_reaches_the_next_similar_prompt(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=2)
    lesson = "LESSON-42: changing sub() breaks test_sub; change only add()"
    spec = script(propose=[FIX_ADD_BREAK_SUB, FIX_ADD], reflect=[lesson])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    attempts = log_json(repo)
    assert attempts[0]["lesson"] == lesson
    [second] = _calls(repo, attempts[1]["id"], "propose")
    assert "LESSON-42" in second["prompt"]
    [first] = _calls(repo, attempts[0]["id"], "propose")
    assert "LESSON-42" not in first["prompt"]


def test_a_token_budget_stops_the_run_before_the_call_that_would_pass_it(
    tmp_path: Path, script
) -> None:
    repo = _repo(tmp_path, cycles=5)
    (repo / "selfforge.toml").write_text(
        (repo / "selfforge.toml").read_text().replace("[limits]", "[limits]\nbudget_tokens = 8000")
    )
    git(repo, "commit", "-qam", "budget")
    big = {"content": FIX_ADD_BREAK_SUB, "usage": {"input_tokens": 6000, "output_tokens": 1500}}
    spec = script(propose=[big] * 5)
    proc = cli("run", "--repo", str(repo), "--model", spec, check=True)
    assert "budget" in proc.stdout
    status = json.loads(cli("status", "--json", "--repo", str(repo), check=True).stdout)
    assert status["last_run"]["status"] == "stopped"
    assert "budget" in status["last_run"]["stop_reason"]
    assert status["input_tokens"] + status["output_tokens"] <= 8000 + 7500


def test_until_stops_starting_attempts(tmp_path: Path, script) -> None:
    """Only --until can end this run: 1,000 cycles of a pytest run each cannot finish in
    3 s, no task is ever skipped, and the model never runs out of replies. (The machine's
    speed decides how many attempts start before the deadline, not whether it stops.)"""
    repo = _repo(tmp_path, cycles=1000, stall_after=1000)
    spec = script(propose=[FIX_ADD_BREAK_SUB] * 1000)
    proc = cli("run", "--repo", str(repo), "--model", spec, "--until", "3s", check=True)
    assert "reached the --until time limit" in proc.stdout
    assert len(log_json(repo)) < 1000


def test_a_stalled_task_is_split_into_smaller_steps_that_land(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=5)
    spec = script(
        plan=["1. Fix calc.py", "1. Make add() in calc.py return a + b\n2. Document mul()"],
        propose=[FIX_ADD_BREAK_SUB] * 3 + [FIX_ADD, MUL_DOC],
    )
    proc = cli("run", "--repo", str(repo), "--model", spec, check=True)
    assert "split into smaller steps" in proc.stdout
    attempts = log_json(repo)
    assert [a["outcome"] for a in attempts] == ["rejected"] * 3 + ["accepted", "accepted"]
    assert attempts[3]["task"] == "Make add() in calc.py return a + b"
    backlog = json.loads(cli("plan", "--json", "--all", "--repo", str(repo), check=True).stdout)
    statuses = {t["text"]: t["status"] for t in backlog}
    assert statuses["Fix calc.py"] == "skipped"
    assert statuses["Document mul()"] == "done"
    with Journal(repo / ".selfforge" / "journal.db") as journal:
        plans = [
            r[0]
            for r in journal.conn.execute(
                "SELECT prompt FROM model_calls WHERE role = 'plan' ORDER BY id"
            )
        ]
    assert len(plans) == 2 and "failed 3 time(s)" in plans[1] and "test_sub" in plans[1]


def test_a_plan_without_a_list_is_named_in_the_stop_reason(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, cycles=3)
    rambling = "I looked at the code.\nIt seems fine overall.\nMaybe refactor later?"
    proc = cli("run", "--repo", str(repo), "--model", script(plan=[rambling]), check=True)
    assert "listed no tasks" in proc.stdout and "I looked at the code." in proc.stdout
    assert log_json(repo) == []
