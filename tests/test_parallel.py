"""`run --parallel N`: N scripted candidates checked at once; the best passing one lands."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    TEST_CALC,
    cli,
    directives,
    git,
    left_worktrees,
    log_json,
    make_repo,
    snapshot,
    trees_dir,
    wait_for,
)

# add() and mul() are both broken: test_add and test_mul fail, test_sub passes.
CALC2 = """\
def add(a, b):
    return a - b


def sub(a, b):
    return a - b


def mul(a, b):
    return a + b
"""

FIXED = "\n\n\n".join(
    [
        "def add(a, b):\n    return a + b",
        "def sub(a, b):\n    return a - b",
        "def mul(a, b):\n    return a * b\n",
    ]
)


def _edit(search: str, replace: str) -> str:
    return f"calc.py\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


ADD_ONLY = _edit("def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
BOTH = ADD_ONLY + _edit("def mul(a, b):\n    return a + b\n", "def mul(a, b):\n    return a * b\n")
BOTH_BREAK_SUB = BOTH + _edit(
    "def sub(a, b):\n    return a - b\n", "def sub(a, b):\n    return a + b\n"
)


@pytest.fixture
def two_bugs(tmp_path: Path) -> Path:
    goals = ("Fix the failing tests",)
    return make_repo(
        tmp_path / "repo",
        {"calc.py": CALC2, "test_calc.py": TEST_CALC},
        directives(goals=goals, max_repairs=2),
    )


def _run(repo: Path, spec: str, *extra: str) -> dict[str, object]:
    proc = cli("run", "--repo", str(repo), "--model", spec, "--parallel", "3", "--json", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    return lines[-1]


def _check_best_landed(repo: Path, before: dict[str, object], summary: dict[str, object]) -> None:
    # The best candidate landed (the second: it fixes both tests), not the first passing one.
    assert summary["parallel"] == 3
    attempts = {a["candidate"]: a for a in summary["attempts"]}  # type: ignore[union-attr]
    assert sorted(attempts) == [1, 2, 3]
    assert attempts[2]["outcome"] == "accepted" and attempts[2]["landed"]
    head = git(repo, "rev-parse", "HEAD").strip()
    assert attempts[2]["commit"] == head
    base = str(before["head"]).strip()
    assert git(repo, "rev-list", "--count", f"{base}..HEAD").strip() == "1"
    # Only candidate 2's change reached the user's checkout; nothing of the others did.
    after = snapshot(repo)
    assert after["status"] == "" and after["branch"] == before["branch"]
    expected = dict(before["files"])  # type: ignore[call-overload]
    expected["calc.py"] = FIXED.encode()
    assert after["files"] == expected
    assert git(repo, "branch", "--list").split() == ["*", "main"]  # no loser kept anywhere
    # The others are journaled, each with why it did not land, as siblings of one cycle.
    journal = {a["id"]: a for a in log_json(repo)}
    ids = [attempts[k]["id"] for k in (1, 2, 3)]
    rows = [journal[i] for i in ids]
    assert [r["candidate"] for r in rows] == [1, 2, 3]
    assert len({(r["run_id"], r["cycle"]) for r in rows}) == 1
    one, _, three = rows
    assert one["outcome"] == "rejected"
    assert one["reason"] == (
        "passed every check, not chosen: candidate 2 fixed more target tests (2 vs 1)"
    )
    assert three["outcome"] == "rejected" and "test_sub" in three["reason"]
    assert not one["commit"] and not three["commit"] and not one["branch"]


def test_parallel_3_lands_the_best_of_three_and_journals_the_others(two_bugs: Path, script) -> None:
    before = snapshot(two_bugs)
    spec = script(propose=[ADD_ONLY, BOTH, BOTH_BREAK_SUB])
    summary = _run(two_bugs, spec)
    _check_best_landed(two_bugs, before, summary)
    # N proposals are N model calls, each journaled with its own attempt and counted.
    from selfforge.journal.store import Journal

    with Journal(two_bugs / ".selfforge" / "journal.db") as journal:
        for attempt in summary["attempts"]:  # type: ignore[union-attr]
            calls = journal.calls(attempt["id"])
            assert [c["role"] for c in calls].count("propose") == 1
        # The dashboard's steps: each candidate's under its own attempt, named as usual.
        steps = {
            k: {r[0] for r in journal.conn.execute(
                "SELECT name FROM steps WHERE attempt_id = ?", (attempt["id"],))}
            for k, attempt in enumerate(summary["attempts"], 1)  # type: ignore[arg-type]
        }  # fmt: skip
    assert {"propose", "apply", "tests", "progress"} <= steps[1]
    assert "land" in steps[2] and "land" not in steps[1] | steps[3]
    assert "verdict" in steps[3] and "verdict" not in steps[1] | steps[2]
    shown = cli("show", str(summary["attempts"][0]["id"]), "--repo", str(two_bugs), check=True)
    assert "candidate 1 of 3" in shown.stdout


def test_the_budget_counts_every_candidates_call(tmp_path: Path, script) -> None:
    limits = "[limits]\ncycles = 1\nmax_repairs = 0\nbudget_tokens = 1000000\n"
    text = directives(goals=("Fix the failing tests",)).replace(
        "[limits]\ncycles = 1\nmax_repairs = 0\n", limits
    )
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC2, "test_calc.py": TEST_CALC}, text)
    before = snapshot(repo)
    big = {"input_tokens": 600_000, "output_tokens": 0}  # one call alone fits the budget
    spec = script(propose=[{"content": reply, "usage": big} for reply in (ADD_ONLY, BOTH, BOTH)])
    summary = _run(repo, spec)
    # Two proposals spent 1.2M (plus the planner's few): the third is refused before it goes.
    why = str(summary["stop_reason"])
    assert re.search(r"token budget \(1,000,000\) would be exceeded: 1,20\d,\d{3} spent", why)
    assert "the next propose call" in why
    assert snapshot(repo) == before  # two proposals made, none checked, nothing landed
    assert [a["outcome"] for a in log_json(repo)] == ["error", "error", "error"]


def test_the_reviewers_see_the_best_first_and_the_next_lands_when_they_refuse_it(
    two_bugs: Path, script
) -> None:
    # Candidate 3 ranks best (both targets fixed); the reviewer refuses it, approves 1.
    spec = script(
        propose=[ADD_ONLY, BOTH_BREAK_SUB, BOTH],
        review=["REJECT: mul() now hides a bug", "APPROVE: fixes add()"],
    )
    proc = cli("run", "--repo", str(two_bugs), "--model", spec, "--parallel", "3")
    assert proc.returncode == 0, proc.stderr
    assert "best of 3: candidate 1 (attempt 1) landed" in proc.stdout  # the run's summary
    report = next((two_bugs / ".selfforge" / "reports").glob("run-*.md")).read_text()
    assert "- cycle 1, candidate 3 (best of N)" in report
    attempts = {a["candidate"]: a for a in log_json(two_bugs)}
    assert attempts[3]["outcome"] == "rejected"
    assert "mul() now hides a bug" in attempts[3]["reason"]
    assert attempts[1]["outcome"] == "accepted" and attempts[1]["landed"]
    assert attempts[1]["commit"] == git(two_bugs, "rev-parse", "HEAD").strip()
    assert "test_sub" in attempts[2]["reason"]
    add_fixed = CALC2.replace("return a - b", "return a + b", 1)  # mul() still broken
    assert (two_bugs / "calc.py").read_text() == add_fixed


@pytest.mark.slow  # starting a local Ray instance takes most of its time
def test_parallel_candidates_run_as_ray_tasks(two_bugs: Path, script) -> None:
    pytest.importorskip("ray")
    before = snapshot(two_bugs)
    spec = script(propose=[ADD_ONLY, BOTH, BOTH_BREAK_SUB])
    _check_best_landed(two_bugs, before, _run(two_bugs, spec, "--backend", "ray"))


def test_best_is_most_targets_fixed_then_more_passing_fewer_lint_smaller_earlier() -> None:
    from selfforge.run.parallel import Rank, why_not

    ranks = [
        Rank(1, fixed=1, passing=1, lint=0, size=2),
        Rank(2, fixed=1, passing=1, lint=0, size=2),  # equal to 1 but later
        Rank(3, fixed=1, passing=1, lint=0, size=9),
        Rank(4, fixed=1, passing=1, lint=3, size=1),
        Rank(5, fixed=1, passing=2, lint=5, size=40),
        Rank(6, fixed=2, passing=2, lint=9, size=99),
    ]
    order = sorted(ranks, key=Rank.key)
    assert [r.number for r in order] == [6, 5, 1, 2, 3, 4]
    assert why_not(order[0], order[1]) == "candidate 6 fixed more target tests (2 vs 1)"
    assert why_not(order[1], order[2]) == "candidate 5 makes more tests pass (2 vs 1)"
    assert why_not(order[2], order[3]) == "candidate 1 came first (equal on every count)"
    assert why_not(order[3], order[4]) == "candidate 2's change is smaller (2 vs 9 changed lines)"
    assert why_not(order[4], order[5]) == "candidate 3 leaves fewer lint findings (0 vs 3)"


SLOW_WHEN_FIXED = """\
import time
from pathlib import Path


def test_slow_in_candidates():
    if "return a - b\\n\\n\\ndef sub" not in Path("calc.py").read_text():
        time.sleep(120)
"""


def _checks_in(repo: Path, slot: str) -> list[int]:
    """Processes whose command line names this worktree (the sandboxed checks in it)."""
    where = f"{trees_dir(repo)}/worktrees/{slot}"
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if where in cmdline.read_bytes().decode(errors="replace"):
                found.append(int(cmdline.parent.name))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def test_a_killed_parallel_run_leaves_no_check_running_and_is_recovered(
    tmp_path: Path, script
) -> None:
    files = {"calc.py": CALC2, "test_calc.py": TEST_CALC, "test_slow.py": SLOW_WHEN_FIXED}
    text = directives(goals=("Fix the failing tests",))
    repo = make_repo(tmp_path / "repo", files, text)
    before = snapshot(repo)
    spec = script(propose=[ADD_ONLY, BOTH])
    command = [sys.executable, "-m", "selfforge", "run", "--repo", str(repo), "--model", spec]
    proc = subprocess.Popen(
        [*command, "--parallel", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for(lambda: _checks_in(repo, "attempt-1") and _checks_in(repo, "attempt-2"))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # The workers die with the run, and the sandboxed checks with the workers.
    wait_for(lambda: not _checks_in(repo, "attempt-1") and not _checks_in(repo, "attempt-2"), 20)
    assert snapshot(repo) == before
    status = cli("status", "--repo", str(repo), check=True).stdout
    assert "running:    no" in status  # no worker kept the run lock
    second = cli("run", "--repo", str(repo), "--model", script(propose=[]))
    assert second.returncode == 0, second.stderr
    assert "recovered" in second.stdout and "2 open attempt(s) closed" in second.stdout
    assert [a["outcome"] for a in log_json(repo)] == ["error", "error", "no_edits"]
    # The candidates' worktrees (attempt-1, attempt-2) are gone; the kept slots stay.
    assert left_worktrees(repo)[0] == ["attempt", "baseline"]


def test_bad_parallel_options_are_one_line_usage_errors(calc_repo: Path) -> None:
    for args, words in (
        (["--parallel", "2", "--backend", "cluster"], ["'cluster'", "pool, ray"]),
        (["--parallel", "0"], ["--parallel"]),
    ):
        proc = cli("run", "--repo", str(calc_repo), "--model", "script:none.json", *args)
        assert proc.returncode == 2, proc.stderr
        assert all(w in proc.stderr for w in words) and "Traceback" not in proc.stderr
