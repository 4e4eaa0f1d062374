"""`selfforge demo`: the quick start's main job, with no setup and no key."""

from __future__ import annotations

from pathlib import Path

from conftest import cli, git, log_json


def test_demo_shows_a_rejection_then_an_acceptance_and_where_the_journal_is(
    tmp_path: Path,
) -> None:
    project = tmp_path / "demo"
    proc = cli("demo", "--replay", "--dir", str(project))
    assert proc.returncode == 0, proc.stderr
    assert (project / "calc.py").is_file()  # --dir is the project itself
    refused = cli("demo", "--replay", "--dir", str(project))
    assert refused.returncode == 2 and "not empty" in refused.stderr
    out = proc.stdout
    assert "replays a model session recorded for it" in out
    assert "1 accepted, 1 rejected" in out
    assert "test_sub" in out  # the rejected candidate broke another test, and says which
    assert str(project / ".selfforge") in out and "selfforge log --repo" in out
    assert "selfforge init" in out and "GEMINI_API_KEY" in out
    assert [a["outcome"] for a in log_json(project)] == ["rejected", "accepted"]
    assert "_combine(a, b, 1)" in (project / "calc.py").read_text()
    assert git(project, "status", "--porcelain") == ""
