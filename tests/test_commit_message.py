"""Commit messages a reviewer wants: a subject saying what changed, the task and why it
was accepted in the body, trailers git itself can parse."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

from selfforge.config import Directives
from selfforge.journal.store import Journal
from selfforge.judge.runners import results as checks
from selfforge.judge.verdict import Observed
from selfforge.run.commit_message import (
    Evidence,
    Vote,
    commit_message,
    landing_message,
    restate,
    subject,
)

from conftest import CALC, FIX_ADD, cli, git, log_json, make_repo


def _message(**overrides: object) -> str:
    facts: dict[str, object] = {
        "task": "Fix add() so that test_add passes",
        "attempt_id": 42,
        "run_id": 7,
        "model": "gemini:gemini-2.5-flash",
        "cost_usd": 0.0123,
        "changed": ["calc.py"],
        "evidence": Evidence(
            tests_passed=3,
            tests_collected=3,
            baseline_passed=2,
            baseline_collected=3,
            fixed=["test_calc.py::test_add"],
            lint_findings=0,
            baseline_lint=1,
            votes=[Vote(True, "adds instead of subtracting", "correctness")],
            quorum=1,
        ),
    }
    facts.update(overrides)
    return commit_message(**facts)  # type: ignore[arg-type]


def test_subject_names_the_change_and_body_says_why(tmp_path: Path) -> None:
    text = _message()
    first, blank, *_ = text.splitlines()
    assert first == "calc.py: fix add() so that test_add passes" and blank == ""
    assert "Task: Fix add() so that test_add passes" in text
    flat = " ".join(text.split())
    assert "tests: 3 of 3 pass (before: 2 of 3); now passing: test_calc.py::test_add" in flat
    assert "no regression: every test that passed before still passes" in flat
    assert "lint: 0 finding(s) (before: 1)" in flat
    assert "review: 1 of 1 approved (quorum 1): correctness: adds instead of subtracting" in flat
    assert all(len(line) <= 72 for line in text.splitlines())


def test_trailers_are_what_git_parses(tmp_path: Path) -> None:
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=_message(model="openai:my-model@http://localhost:8000/v1"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert parsed == [
        "Selfforge-Attempt: 42",
        "Selfforge-Run: 7",
        "Selfforge-Model: openai:my-model@http://localhost:8000/v1",
        "Selfforge-Cost: $0.0123",
    ]


def test_long_tasks_keep_a_short_subject_and_the_whole_task_in_the_body() -> None:
    task = "Make every public function in the parser module carry type hints " * 3
    text = _message(task=task, changed=["src/pkg/parser.py", "src/pkg/lexer.py"])
    first = text.splitlines()[0]
    assert len(first) <= 72 and first.startswith("src: make every public function")
    assert first.endswith("…")
    assert " ".join(task.split()) in " ".join(text.split())
    assert "Files: src/pkg/parser.py, src/pkg/lexer.py" in text


def test_subject_does_not_repeat_a_place_the_task_names() -> None:
    assert subject("Fix add() in calc.py.", ["calc.py"]) == "Fix add() in calc.py"
    assert subject("Task: speed up the cache", ["a.py", "b/c.py"]) == "speed up the cache"


def test_no_tests_no_lint_no_review_still_says_what_it_knows() -> None:
    text = _message(evidence=Evidence(repairs=2), cost_usd=None)
    assert "passed after 2 repair round(s)" in text
    assert "Selfforge-Cost: unknown" in text and "tests:" not in text


def test_restate_keeps_tree_parents_and_author(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC})
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b", 1))
    git(repo, "commit", "-qam", "selfforge: wip", "--author", "Bot <bot@example.com>")
    before = git(repo, "show", "-s", "--format=%T %P %an %ae %ad", "HEAD")
    sha = restate(repo, git(repo, "rev-parse", "HEAD").strip(), _message())
    assert git(repo, "show", "-s", "--format=%T %P %an %ae %ad", sha) == before
    assert git(repo, "log", "-1", "--format=%B", sha) == _message() + "\n"


def test_landing_message_reads_votes_and_cost_from_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.db")
    run = journal.start_run(
        pid=1, base_branch="main", base_commit="0" * 40, model="m", goals=[], land_mode="merge"
    )
    attempt = journal.start_attempt(run, 1, "Fix add()", "0" * 40)
    prompt = (
        "Review this change as security reviewer. ... Judge only through your focus (security)."
    )
    for role, reply, cost in (("propose", "edits", 0.01), ("review", "APPROVE: [ok] safe", 0.002)):
        journal.record_call(
            run_id=run,
            attempt_id=attempt,
            role=role,
            model="m",
            prompt=prompt,
            response=reply,
            error=None,
            cost_usd=cost,
        )
    directives = Directives()
    directives.roles.reviewers = ["security"]
    engine = SimpleNamespace(
        d=directives,
        journal=journal,
        run_id=run,
        caller=SimpleNamespace(model=SimpleNamespace(spec="m")),
    )
    report = checks.TestReport({"t::a": "passed", "t::b": "passed"})
    baseline = Observed(tests=checks.TestReport({"t::a": "passed", "t::b": "failed"}), lint=[])
    text = landing_message(
        engine, attempt, "Fix add()", baseline, Observed(tests=report, lint=[]), ["calc.py"], 1
    )
    flat = " ".join(text.split())
    assert "now passing: t::b" in flat and "lint: 0 finding(s) (before: 0)" in flat
    assert "review: 1 of 1 approved (quorum 1): security: [ok] safe" in flat
    assert "passed after 1 repair round(s)" in flat
    assert f"Selfforge-Attempt: {attempt}\nSelfforge-Run: {run}\n" in text
    assert "Selfforge-Cost: $0.0120" in text


def test_a_landed_commit_carries_task_reasons_and_trailers(calc_repo: Path, script) -> None:
    spec = script(propose=[FIX_ADD], review=["APPROVE: [ok] adds now"])
    cli("run", "--repo", str(calc_repo), "--model", spec, check=True)
    [attempt] = log_json(calc_repo)
    body = git(calc_repo, "log", "-1", "--format=%B")
    assert body.splitlines()[0].startswith("calc.py: ") or "calc.py" in body.splitlines()[0]
    assert "Accepted because:" in body and "no regression" in body
    assert "[ok] adds now" in body
    trailers = git(calc_repo, "log", "-1", "--format=%(trailers:only,unfold)")
    assert f"Selfforge-Attempt: {attempt['id']}" in trailers
    assert f"Selfforge-Run: {attempt['run_id']}" in trailers
    assert "Selfforge-Model: script:" in trailers and "Selfforge-Cost: $" in trailers
