"""`selfforge demo`: the quick start's main job, with no setup and no key."""

from __future__ import annotations

from pathlib import Path

from conftest import cli, git, log_json


def test_demo_shows_a_rejection_then_an_acceptance_and_where_the_journal_is(
    tmp_path: Path,
) -> None:
    """Then a measured goal (issue 42.10): a rename claiming speed is refused by the
    measure (unchanged; inconclusive on a machine too noisy to tell), a real speed-up
    lands with its figures."""
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
    attempts = log_json(project)
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted"] * 2, attempts
    assert "_combine(a, b, 1)" in (project / "calc.py").read_text()
    assert git(project, "status", "--porcelain") == ""

    rename, speed_up = attempts[2:]
    assert rename["task"] == speed_up["task"] == "Make dedupe() faster"
    reason = str(rename["reason"])
    assert reason.startswith("goal measure dedupe: "), reason
    assert reason.split(";")[0].endswith((": unchanged", ": inconclusive")), reason
    assert "measure dedupe: " in str(speed_up["reason"]) and " ms → " in str(speed_up["reason"])
    assert ": improved" in str(speed_up["reason"]), speed_up
    assert "dict.fromkeys" in (project / "dedupe.py").read_text()
    assert git(project, "rev-list", "--count", "HEAD").strip() == "3"
    assert "A measured goal" in out and "[[measures]]" in out and " runs: improved" in out
    assert f"show 3 --repo {project}" in out and "--measure NAME" in out
