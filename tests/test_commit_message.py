"""Commit messages a reviewer wants: a subject saying what changed, the task and why it
was accepted in the body, trailers git itself can parse."""

from __future__ import annotations

import subprocess
from pathlib import Path

from selfforge.commit_message import Evidence, Vote, commit_message, subject


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
