"""Junk from small models: unusable tasks and lessons, placeholder paths, cut replies."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from selfforge.edits.safety import Refused, normalize
from selfforge.roles.junk import complete_edits_prefix, lesson_junk, task_junk

from conftest import FIX_ADD, cli, log_json


@pytest.mark.parametrize(
    ("task", "why"),
    [
        ("Fix add() in calc.py", None),
        ("Tidy mul()", None),
        ("1", "too short"),
        ("### --- ###", "not words"),
        ("Reply with a numbered list of at most 3 new tasks", "prompt's instructions"),
        ("fix fix fix fix fix fix fix fix fix fix fix fix fix", "repeats itself"),
        ("Fix the bug in path/to/file.py", "placeholder path"),
        ("What should I change?", "a question"),
    ],
)
def test_task_junk(task: str, why: str | None) -> None:
    found = task_junk(task)
    assert (found is None) if why is None else (why in (found or ""))


def test_lesson_junk() -> None:
    about = "Task: Fix add() in calc.py\nOutcome: rejected\nReason: test_add failed"
    assert lesson_junk("Check add() against test_add before editing", about, []) is None
    assert "empty" in (lesson_junk("  ", about, []) or "")
    assert "not about" in (lesson_junk("The weather is nice today", about, []) or "")
    earlier = ["Check add() against test_add before editing."]
    assert "earlier" in (
        lesson_junk("check add() against test_add before editing", about, earlier) or ""
    )


@pytest.mark.parametrize("path", ["path/to/file.py", "src/path/to/x.py", "your_file.py", "<file>"])
def test_placeholder_paths_are_refused(path: str) -> None:
    with pytest.raises(Refused, match="placeholder"):
        normalize(path)


def test_ordinary_paths_pass() -> None:
    assert normalize("src/pathology/to_file.py") == "src/pathology/to_file.py"


def test_a_cut_reply_keeps_only_its_complete_edits() -> None:
    whole = "calc.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"
    assert complete_edits_prefix(whole + "\ncalc.py\n<<<<<<< SEARCH\nc\n==") == (whole, 1)
    fenced = "calc.py\n```python\nx = 1\n```\n"
    assert complete_edits_prefix(fenced + "other.py\n```python\ny =") == (fenced, 1)
    assert complete_edits_prefix("calc.py\n```python\ndef add(a, b):\n    return") == ("", 0)


# --- through a run, with the scripted model ---------------------------------------------

CUT = {"content": FIX_ADD.rsplit("=======", 1)[0], "truncated": True}
PLACEHOLDER_EDIT = "path/to/file.py\n<<<<<<< SEARCH\n=======\nprint('hi')\n>>>>>>> REPLACE\n"


def _calls(repo: Path) -> list[tuple[str, str | None, str | None]]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        return list(db.execute("SELECT role, note, error FROM model_calls ORDER BY id"))


def test_junk_never_becomes_a_task_lesson_or_file(calc_repo: Path, script) -> None:
    spec = script(
        plan=["1. ###\n2. Fix the bug in path/to/file.py\n3. Fix add() in calc.py"],
        propose=[PLACEHOLDER_EDIT, CUT, FIX_ADD],
        reflect=["The weather is nice today", {"content": "Lesson", "truncated": True}],
    )
    proc = cli("run", "--repo", str(calc_repo), "--model", spec, "--cycles", "3")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (calc_repo / "path").exists()
    with sqlite3.connect(calc_repo / ".selfforge" / "journal.db") as db:
        tasks = dict(db.execute("SELECT text, coalesce(note, status) FROM tasks"))
        lessons = [r[0] for r in db.execute("SELECT lesson FROM attempts ORDER BY id")]
    assert "junk from the planner: too short" in tasks["###"]
    assert "placeholder" in tasks["Fix the bug in path/to/file.py"]
    attempts = log_json(calc_repo)
    assert {a["task"] for a in attempts} == {"Fix add() in calc.py"}
    outcomes = [a["outcome"] for a in attempts]
    assert outcomes[0] == "rejected" and "placeholder" in str(attempts[0]["reason"])
    assert outcomes[1] == "error" and "cut at" in str(attempts[1]["reason"])
    assert outcomes[2] == "accepted"
    assert all("weather" not in (lesson or "") for lesson in lessons)
    notes = [note for _, note, _ in _calls(calc_repo) if note]
    assert any("not about the attempt" in n for n in notes)
    assert any(n.startswith("cut at") for n in notes)


def test_a_model_that_keeps_missing_the_edit_format_gets_a_verdict() -> None:
    from selfforge.roles.junk import edit_format_verdict

    missed = [
        (True, "the model proposed no edits"),
        (False, "edits did not apply: calc.py: SEARCH not found"),
        (False, "the model's reply was cut at the 8-token output limit before any edit"),
    ]
    verdict = edit_format_verdict(missed, "llamacpp:default")
    assert verdict is not None and verdict.startswith("llamacpp:default did not produce")
    assert "1× no edits in its reply" in verdict and "whole_file" in verdict
    assert edit_format_verdict(missed[:2], "m") is None  # not yet N in a row
    assert edit_format_verdict([*missed[:2], (False, "test_add failed")], "m") is None
