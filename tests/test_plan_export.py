"""`selfforge plan` edits the backlog a run works through; `selfforge export` turns the
journal into training data. Real git repositories, the real CLI, a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from selfforge.journal.store import Journal

from conftest import CALC, FIX_ADD, FIX_ADD_BREAK_SUB, TEST_CALC, cli, directives, git, make_repo


def plan(repo: Path) -> list[dict[str, object]]:
    return json.loads(cli("plan", "--json", "--all", "--repo", str(repo), check=True).stdout)


def texts(rows: list[dict[str, object]], status: str = "open") -> list[object]:
    return [r["text"] for r in rows if r["status"] == status]


def test_plan_edits_round_trip_and_the_next_run_takes_the_first_open_task(
    calc_repo: Path, script
) -> None:
    repo = ["--repo", str(calc_repo)]
    missing = cli("plan", *repo)
    assert missing.returncode == 2 and "selfforge plan add" in missing.stderr
    cli("plan", "add", "Make add() return the sum", *repo, check=True)
    cli("plan", "add", "Add a docstring to mul()", *repo, check=True)
    added = cli("plan", "add", "Rename calc.py", "--top", *repo, check=True)
    assert "position 1" in added.stdout
    assert texts(plan(calc_repo)) == [
        "Rename calc.py",
        "Make add() return the sum",
        "Add a docstring to mul()",
    ]

    cli("plan", "move", "1", "--to", "1", *repo, check=True)
    cli("plan", "drop", "3", *repo, check=True)
    rows = plan(calc_repo)
    assert texts(rows) == ["Make add() return the sum", "Add a docstring to mul()"]
    assert [r["position"] for r in rows] == [1, 2, None]
    assert texts(rows, "dropped") == ["Rename calc.py"]
    assert rows[2]["note"] == "dropped by the user"

    cli("plan", "move", "2", "--to", "1", *repo, check=True)
    assert texts(plan(calc_repo))[0] == "Add a docstring to mul()"
    cli("plan", "move", "1", "--to", "1", *repo, check=True)
    for bad, fix in (
        (("drop", "99"), "selfforge plan"),
        (("drop", "3"), "plan add"),
        (("move", "1", "--to", "3"), "1..2"),
    ):
        proc = cli("plan", *bad, *repo)
        assert proc.returncode == 2, proc.stderr
        assert fix in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1

    # The .selfforge/ directory the first `plan add` created stays out of git.
    assert git(calc_repo, "status", "--porcelain") == ""
    proc = cli("run", *repo, "--cycles", "1", "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 0, proc.stderr
    [attempt] = json.loads(cli("log", "--json", *repo, check=True).stdout)
    assert attempt["task"] == "Make add() return the sum"
    assert attempt["outcome"] == "accepted"
    rows = plan(calc_repo)
    assert texts(rows) == ["Add a docstring to mul()"]
    assert texts(rows, "done") == ["Make add() return the sum"]
    assert texts(rows, "dropped") == ["Rename calc.py"]


def test_plan_options_may_come_before_the_subcommand(calc_repo: Path) -> None:
    cli("plan", "--repo", str(calc_repo), "add", "First", check=True)
    cli("plan", "add", "Second", "--repo", str(calc_repo), check=True)
    assert texts(plan(calc_repo)) == ["First", "Second"]
    shown = cli("plan", "--repo", str(calc_repo), check=True).stdout
    assert "First" in shown and "open" in shown


def demo_like_run(tmp_path: Path, script, cycles: int = 2, **roles: list[object]) -> Path:
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(cycles=cycles, max_repairs=0),
    )
    proc = cli("run", "--repo", str(repo), "--model", script(**roles))
    assert proc.returncode == 0, proc.stderr
    return repo


def export(repo: Path, fmt: str) -> list[dict[str, object]]:
    proc = cli("export", "--format", fmt, "--repo", str(repo), check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_export_sft_and_dpo_after_a_rejection_then_an_acceptance(tmp_path: Path, script) -> None:
    repo = demo_like_run(tmp_path, script, propose=[FIX_ADD_BREAK_SUB, FIX_ADD])
    attempts = json.loads(cli("log", "--json", "--repo", str(repo), check=True).stdout)
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted"]
    rejected, accepted = attempts
    with Journal(repo / ".selfforge" / "journal.db") as journal:
        [accepted_call] = [c for c in journal.calls(accepted["id"]) if c["role"] == "propose"]
        [rejected_call] = [c for c in journal.calls(rejected["id"]) if c["role"] == "propose"]

    [sft] = export(repo, "sft")
    system, user, assistant = sft["messages"]
    assert [m["role"] for m in sft["messages"]] == ["system", "user", "assistant"]
    assert "careful senior engineer" in system["content"]
    assert user["content"] == accepted_call["prompt"]
    assert "Fix add() so test_add passes" in user["content"]
    assert assistant["content"] == FIX_ADD
    assert sft["metadata"]["attempt_id"] == accepted["id"]
    assert sft["metadata"]["task"] == "Fix add() so test_add passes"
    assert sft["metadata"]["commit"] == git(repo, "rev-parse", "HEAD").strip()

    [dpo] = export(repo, "dpo")
    assert dpo["prompt"][0] == system
    assert dpo["prompt"][1] == {"role": "user", "content": rejected_call["prompt"]}
    assert dpo["chosen"] == [{"role": "assistant", "content": FIX_ADD}]
    assert dpo["rejected"] == [{"role": "assistant", "content": FIX_ADD_BREAK_SUB}]
    meta = dpo["metadata"]
    assert (meta["chosen_attempt_id"], meta["rejected_attempt_id"]) == (
        accepted["id"],
        rejected["id"],
    )
    assert meta["task_id"] == plan(repo)[0]["id"]
    assert "test_sub" in meta["rejected_reason"]
    assert meta["chosen_base_commit"] == meta["rejected_base_commit"]  # an exact pair
    assert (meta["chosen_repairs"], meta["rejected_repairs"]) == (0, 0)

    out = tmp_path / "sft.jsonl"
    proc = cli("export", "--format", "sft", "--repo", str(repo), "--out", str(out), check=True)
    assert "1 sft record" in proc.stdout
    assert [json.loads(line) for line in out.read_text().splitlines()] == [sft]


def test_dpo_pairs_attempts_across_a_diagnosed_rewrite_of_the_task(tmp_path: Path, script) -> None:
    # Two rejections make the loop diagnose the task: the third attempt runs under a new
    # text, yet both rejected replies pair with its accepted one.
    new_text = "Fix add() and leave sub() as it is"
    repo = demo_like_run(
        tmp_path,
        script,
        cycles=3,
        propose=[
            FIX_ADD_BREAK_SUB,
            "calc.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n",
            FIX_ADD,
        ],
        diagnose=[new_text],
    )
    attempts = json.loads(cli("log", "--json", "--repo", str(repo), check=True).stdout)
    assert [a["outcome"] for a in attempts] == ["rejected", "rejected", "accepted"]
    assert attempts[2]["task"] == new_text != attempts[0]["task"]
    [task] = plan(repo)
    assert task["text"] == new_text and task["status"] == "done"

    pairs = export(repo, "dpo")
    assert [p["metadata"]["rejected_attempt_id"] for p in pairs] == [1, 2]
    assert {p["metadata"]["chosen_attempt_id"] for p in pairs} == {3}
    assert {p["metadata"]["task_id"] for p in pairs} == {task["id"]}
    assert pairs[0]["rejected"][0]["content"] == FIX_ADD_BREAK_SUB
    assert "not there" in pairs[1]["rejected"][0]["content"]
    [sft] = export(repo, "sft")
    assert sft["metadata"]["task"] == new_text


def test_export_errors_are_one_line_usage_errors(calc_repo: Path, tmp_path: Path) -> None:
    proc = cli("export", "--format", "sft", "--repo", str(calc_repo))
    assert proc.returncode == 2 and "selfforge run" in proc.stderr
    cli("plan", "add", "Something", "--repo", str(calc_repo), check=True)
    proc = cli("export", "--format", "ppo", "--repo", str(calc_repo))
    assert proc.returncode == 2 and "--format sft" in proc.stderr
    proc = cli(
        "export", "--format", "dpo", "--repo", str(calc_repo), "--out", str(tmp_path / "no/x")
    )
    assert proc.returncode == 2 and "create it first" in proc.stderr
    empty = cli("export", "--format", "dpo", "--repo", str(calc_repo), check=True)
    assert empty.stdout == "" and "0 dpo record" in empty.stderr


def test_an_attempt_exports_its_last_propose_reply_and_identical_pairs_are_left_out(
    tmp_path: Path,
) -> None:
    from selfforge.cli import export as exporting

    with Journal(tmp_path / "journal.db") as journal:
        run = journal.start_run(
            pid=1, base_branch="main", base_commit="0" * 40, model="m", goals=[], land_mode="merge"
        )

        def attempt(task: str, outcome: str, *replies: str | None) -> int:
            attempt_id = journal.start_attempt(run, 1, task, "0" * 40)
            for n, reply in enumerate(replies):
                journal.record_call(
                    run_id=run,
                    attempt_id=attempt_id,
                    role="propose",
                    model="m",
                    prompt=f"prompt {attempt_id}.{n}",
                    response=reply,
                    error=None if reply is not None else "scripted server error",
                )
            journal.finish_attempt(attempt_id, outcome=outcome, reason="r", repairs=0)
            return attempt_id

        attempt("T", "rejected", "same edit")
        attempt("T", "error", "edit", None)  # its last call failed: no final candidate
        accepted = attempt("T", "accepted", "broken edit", "same edit")
        attempt("U", "rejected", "other edit")  # no accepted attempt at U to pair with
        [sft] = exporting.sft_records(journal)
        assert sft.proposal.attempt.id == accepted
        assert sft.proposal.prompt == f"prompt {accepted}.1"
        assert sft.proposal.reply == "same edit"
        assert exporting.dpo_records(journal) == []
