"""An outside agent's run stops at the run's budget like a one-shot or exploring run: a
round that would start with the budget spent is not started; the run stops with the
budget's reason instead of making each cycle left an attempt with no edits."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import CALC, TEST_CALC, cli, directives, git, log_json, make_repo


def test_an_agent_run_stops_when_the_budget_is_spent_before_a_round(tmp_path: Path, script) -> None:
    d = directives().replace("[limits]\n", "[limits]\nbudget_tokens = 40000\n", 1)
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, d)
    toml = (repo / "selfforge.toml").read_text().replace("cycles = 1", "cycles = 3")
    (repo / "selfforge.toml").write_text(toml)
    git(repo, "commit", "-q", "-am", "three cycles")
    # The first cycle's reflection spends past the budget (the agent itself reports none).
    spend = {"content": "a lesson", "usage": {"input_tokens": 50_000, "output_tokens": 100}}
    spec = script(reflect=[spend] * 3, critique=[spend] * 3)
    agent = "cmd:sed -i 's/nothing/nothing/' calc.py"  # changes nothing
    out = cli(
        "run", "--repo", str(repo), "--model", spec, "--agent", agent, "--task", "Fix add()",
        check=True,
    ).stdout  # fmt: skip
    first, second = log_json(repo)
    assert first["outcome"] == "no_edits", first
    assert second["outcome"] == "error", second
    assert second["reason"].startswith("stopped: the run's token budget (40,000) is spent")
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        ((status, why),) = db.execute("SELECT status, stop_reason FROM runs").fetchall()
        agents = db.execute("SELECT count(*) FROM model_calls WHERE role = 'agent'").fetchone()
        last = db.execute("SELECT kind, output FROM trajectory ORDER BY id DESC").fetchone()
    assert status == "stopped" and "raise limits.budget_tokens" in why, why
    assert agents == (1,)  # the second cycle's agent never started
    assert last[0] == "limit" and "stopped at the run's budget" in last[1], last
    assert "raise limits.budget_tokens in selfforge.toml" in out
