"""The exploring proposer's limits and its trajectory's figures (issue 35 points 1 and 4):
the round's wall time and the run's token budget stop it, each saying which limit did;
every step is journaled with its tokens and time, shown by `show --steps` and the
dashboard (an outside agent's steps too); and the one-shot proposer stays the default.

The scripted model cannot be priced (its replies cost $0.0, and a $0 budget lets free
models run), so the budget tested here is `[limits] budget_tokens`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx
import pytest

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
from serve_helpers import Server


def bash(command: str) -> str:
    return f"Let me look.\n```bash\n{command}\n```\n"


def spent(content: str, input_tokens: int, output_tokens: int) -> dict[str, object]:
    """A scripted reply that reports its usage."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {"content": content, "usage": usage}


def calc_repo_with(tmp_path: Path, model: dict[str, object], limits: str = "") -> Path:
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in model.items())
    d = directives(extra=f"\n[model]\n{lines}\n")
    if limits:  # directives() writes [limits]: its keys go there, not after [model]
        d = d.replace("[limits]\n", f"[limits]\n{limits}\n", 1)
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, d)


def explore(repo: Path, spec: str) -> str:
    args = ("run", "--repo", str(repo), "--model", spec, "--task", "Fix add()")
    return cli(*args, "--proposer", "explore", check=True).stdout


def rows(repo: Path, sql: str) -> list[dict[str, object]]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute(sql)]


def steps(repo: Path) -> list[dict[str, object]]:
    return rows(repo, "SELECT * FROM trajectory ORDER BY id")


# --- point 1: the limits ----------------------------------------------------------------


def test_the_round_s_wall_time_stops_a_long_command_and_the_change_is_judged(
    tmp_path: Path, script
) -> None:
    """explore_seconds bounds the round: a command that would sleep 60 s under a 120 s
    command timeout is killed when the round's time is up, the round ends with a 'limit'
    step naming [model] explore_seconds, and the edit made before is judged and lands."""
    repo = calc_repo_with(tmp_path, {"explore_seconds": 3, "explore_command_s": 120})
    spec = script(propose=[FIX_ADD, bash("sleep 60; echo SLEPT-ENOUGH"), bash("ls"), "DONE"])
    explore(repo, spec)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    assert "return a + b" in (repo / "calc.py").read_text()
    ran = steps(repo)
    kinds = [s["kind"] for s in ran]
    assert kinds[:2] == ["task", "edit"] and kinds[-1] == "limit", kinds
    assert bash("ls") not in [s["action"] for s in ran]  # nothing after the time was up
    assert "[model] explore_seconds" in str(ran[-1]["output"])
    assert "stopped at the time limit (3 s" in str(ran[-1]["output"])
    for step in ran:
        assert "SLEPT-ENOUGH" not in str(step["output"])
    if kinds == ["task", "edit", "bash", "limit"]:  # the sleep started within the 3 s
        killed = str(ran[2]["output"])
        assert "The command was killed after" in killed and "explore_seconds" in killed
        assert "explore_command_s" not in killed  # its own 120 s did not stop it


def test_the_round_s_wall_time_is_the_reason_of_an_attempt_with_no_edits(
    tmp_path: Path, script
) -> None:
    repo = calc_repo_with(tmp_path, {"explore_seconds": 1, "explore_command_s": 120})
    spec = script(propose=[bash("sleep 30; echo SLEPT-ENOUGH"), FIX_ADD, "DONE"])
    explore(repo, spec)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "no_edits"
    assert attempt["reason"] == (
        "the model proposed no edits: stopped at the time limit (1 s, [model] explore_seconds)"
    )
    ran = steps(repo)
    assert [s["kind"] for s in ran] == ["task", "bash", "limit"]
    assert "(the time left of the round, [model] explore_seconds)" in str(ran[1]["output"])
    assert "return a - b" in (repo / "calc.py").read_text()


def test_the_run_s_token_budget_counts_explore_steps_and_stops_the_run(
    tmp_path: Path, script
) -> None:
    """Each step's reply reports 50,000 + 100 tokens against a budget of 75,000: two
    steps are made, the third would pass the budget and is never asked; what the
    worktree then holds is judged (here, rejected); the next cycle's explorer has no
    budget for its first step, and the run stops with the budget's reason."""
    repo = calc_repo_with(tmp_path, {}, limits="budget_tokens = 75000")
    toml = (repo / "selfforge.toml").read_text().replace("cycles = 1", "cycles = 3")
    (repo / "selfforge.toml").write_text(toml + '\n[roles]\nenabled = ["propose"]\n')
    git(repo, "commit", "-q", "-am", "three cycles, no critic")
    replies = [spent(FIX_ADD_BREAK_SUB, 50_000, 100), spent(bash("ls"), 50_000, 100), "DONE"]
    out = explore(repo, script(propose=replies))

    asked = rows(repo, "SELECT * FROM model_calls ORDER BY id")
    assert [(c["role"], c["input_tokens"], c["output_tokens"]) for c in asked] == [
        ("propose", 50_000, 100)
    ] * 2
    ran = steps(repo)
    kinds = [(s["attempt_id"], s["kind"]) for s in ran]
    assert kinds == [(1, "task"), (1, "edit"), (1, "bash"), (1, "limit"), (2, "task"), (2, "limit")]
    assert [(s["input_tokens"], s["output_tokens"]) for s in ran[1:3]] == [(50_000, 100)] * 2
    for limit in (ran[3], ran[5]):
        assert "stopped at the run's budget: the run's token budget (75,000)" in limit["output"]
    first, second = log_json(repo)
    assert first["outcome"] == "rejected" and "test_sub" in first["reason"], first
    assert second["outcome"] == "error", second
    assert second["reason"].startswith("stopped: the run's token budget (75,000) would be")
    assert second["reason"].endswith(
        "raise limits.budget_tokens in selfforge.toml; nothing was landed"
    )
    [run] = rows(repo, "SELECT * FROM runs")
    assert run["status"] == "stopped", run
    assert str(run["stop_reason"]).startswith("stopped: the run's token budget (75,000)")
    assert "raise limits.budget_tokens" in out


# --- point 4: each step's tokens and time -------------------------------------------------


def test_every_step_carries_its_tokens_and_time_and_show_prints_them(
    tmp_path: Path, script
) -> None:
    repo = calc_repo_with(tmp_path, {})
    replies = [
        spent(bash("grep -n 'def add' calc.py"), 900, 80),
        spent(FIX_ADD, 1_200, 60),
        spent("DONE", 1_300, 5),
    ]
    explore(repo, script(propose=replies))

    ran = steps(repo)
    assert [s["kind"] for s in ran] == ["task", "bash", "edit", "done"]
    for step in ran:
        assert step["seconds"] is not None and step["seconds"] >= 0, step
        assert step["input_tokens"] is not None and step["output_tokens"] is not None, step
    figures = [(s["input_tokens"], s["output_tokens"]) for s in ran]
    assert figures == [(0, 0), (900, 80), (1_200, 60), (1_300, 5)]
    # The command's step includes the command's own run: it took some time.
    assert ran[1]["seconds"] > 0

    brief = cli("show", "last", "--repo", str(repo), check=True).stdout
    full = cli("show", "last", "--repo", str(repo), "--steps", check=True).stdout
    for shown in (brief, full):
        assert "[900+80 tok, " in shown and "[1200+60 tok, " in shown, shown
        assert "[1300+5 tok, " in shown
    assert "1:def add(a, b):" in full  # --steps: the output in full too


def test_the_dashboard_renders_an_outside_agent_s_trajectory(tmp_path: Path, script) -> None:
    pytest.importorskip("starlette", reason="the dashboard needs the web extra (selfforge[web])")

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    agent = "cmd:echo AGENT-WAS-HERE; sed -i '2s/a - b/a + b/' calc.py"
    args = ("run", "--repo", str(repo), "--model", script(), "--task", "Fix add()")
    cli(*args, "--agent", agent, check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt

    with Server(repo) as server:
        html = httpx.get(f"{server.base}/attempts/{attempt['id']}").text
    table = html.split('id="trajectory"', 1)[1].split("</table>", 1)[0]
    assert "<th>tokens</th><th>seconds</th>" in table
    assert ">task<" in table and "Task: Fix add()" in table  # what it was given
    [row] = [r for r in table.split("<tr")[1:] if "<td>transcript</td>" in r]
    assert "AGENT-WAS-HERE" in row and "sed -i" in row  # its output, its command line
    # exit code, tokens (a cmd: agent reports none) and its time, as the journal has it
    [journaled] = [s for s in steps(repo) if s["kind"] == "transcript"]
    assert journaled["exit_code"] == 0 and journaled["seconds"] > 0
    figures = '<td class="num">0</td><td class="num">0+0</td>'
    figures += f'<td class="num">{journaled["seconds"]:.1f}</td></tr>'
    assert figures in row, row


# --- point 1: the default ---------------------------------------------------------------


def test_one_shot_stays_the_default_proposer(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    args = ("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), "--task", "Fix add()")
    cli(*args, check=True)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    assert steps(repo) == []  # no trajectory: no explorer ran
    [call] = rows(repo, "SELECT * FROM model_calls WHERE role = 'propose'")
    assert call["response"] == FIX_ADD
    assert "exactly ONE action" not in str(call["messages"])  # not the explorer's protocol
    assert "trajectory" not in cli("show", "last", "--repo", str(repo), check=True).stdout
