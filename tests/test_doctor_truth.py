"""`doctor` tells the truth: "ready for run." only when `run` would judge and land; no
commits and a run in progress are each a named problem with its fix; directives that
are not committed are ready for check, not for run."""

from __future__ import annotations

from pathlib import Path

from selfforge.repo.workspace import Workspace

from conftest import CALC, TEST_CALC, cli, directives, git, make_repo

FILES = {"calc.py": CALC, "test_calc.py": TEST_CALC}


def _doctor(repo: Path, script: str) -> tuple[int, str]:
    proc = cli("doctor", "--repo", str(repo), "--model", script)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_committed_project_is_ready(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "r", FILES, directives())
    code, out = _doctor(repo, script())
    assert code == 0 and out.rstrip().endswith("ready for run."), out


def test_no_commits_is_a_problem_with_its_fix(tmp_path: Path, script) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    for name, text in {**FILES, "selfforge.toml": directives()}.items():
        (repo / name).write_text(text)
    code, out = _doctor(repo, script())
    assert code == 1 and "ready for" not in out
    assert "no commits yet" in out and "git commit" in out


def test_directives_that_are_not_committed_are_ready_for_check_not_run(
    tmp_path: Path, script
) -> None:
    """`check` reads the working tree's directives, committed or not (tests/
    test_found_on_the_way.py judges with them): doctor agrees, and says `run` could not
    land until they are committed."""
    repo = make_repo(tmp_path / "r", FILES)  # as after `selfforge init`: untracked
    (repo / "selfforge.toml").write_text(directives())
    code, out = _doctor(repo, script())
    assert code == 0 and out.rstrip().endswith(
        "ready for check (`selfforge run` lands once the directives are committed)."
    ), out
    assert "selfforge.toml is not committed" in out and "git add selfforge.toml" in out

    git(repo, "add", "selfforge.toml")
    git(repo, "commit", "-qm", "directives")
    code, out = _doctor(repo, script())
    assert code == 0 and out.rstrip().endswith("ready for run."), out
    (repo / "selfforge.toml").write_text(directives(cycles=2))  # edited, not committed
    code, out = _doctor(repo, script())
    assert code == 0 and "selfforge.toml has uncommitted changes" in out
    assert "ready for run." not in out


def test_a_run_in_progress_is_a_problem(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "r", FILES, directives())
    with Workspace(repo).locked("selfforge run"):  # as a run holds it
        code, out = _doctor(repo, script())
    assert code == 1 and "ready for" not in out
    assert "a run is in progress" in out and "selfforge status" in out
