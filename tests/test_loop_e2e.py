"""The safe improvement loop end to end, on real git repositories, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    TEST_CALC,
    cli,
    directives,
    git,
    left_worktrees,
    log_json,
    make_repo,
    needs_path_pytest,
    snapshot,
)


def test_a_fix_lands_as_one_commit(calc_repo: Path, script) -> None:
    spec = script(propose=[FIX_ADD])
    before = git(calc_repo, "rev-parse", "HEAD").strip()
    proc = cli("run", "--repo", str(calc_repo), "--model", spec)
    assert proc.returncode == 0, proc.stderr
    assert git(calc_repo, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    assert "return a + b" in (calc_repo / "calc.py").read_text()
    assert git(calc_repo, "status", "--porcelain") == ""
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "accepted"
    assert attempt["commit"] == git(calc_repo, "rev-parse", "HEAD").strip()
    assert attempt["branch"] is None
    for key in ("id", "run_id", "task", "reason", "repairs"):
        assert key in attempt


def test_a_fix_that_breaks_another_test_is_rejected_and_nothing_changes(
    calc_repo: Path, script
) -> None:
    (calc_repo / "notes.txt").write_text("my untracked notes\n")
    before = snapshot(calc_repo)
    proc = cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD_BREAK_SUB]))
    assert proc.returncode == 0, proc.stderr
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "rejected"
    assert "test_sub" in attempt["reason"]
    assert "test_add" not in attempt["reason"]  # test_add now passes; it is not a regression
    assert snapshot(calc_repo) == before


def test_a_syntax_error_is_repaired_with_the_error_and_its_line(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(max_repairs=1)
    )
    broken = FIX_ADD.replace("return a + b", "return (a + b")
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[broken, FIX_ADD]))
    assert proc.returncode == 0, proc.stderr
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted"
    assert attempt["repairs"] == 1
    from selfforge.journal.store import Journal

    with Journal(repo / ".selfforge" / "journal.db") as journal:
        proposes = [c for c in journal.calls(attempt["id"]) if c["role"] == "propose"]
    assert len(proposes) == 2
    repair_prompt = proposes[1]["prompt"]
    assert "SyntaxError" in repair_prompt
    assert "calc.py:2" in repair_prompt  # the file and the line of the error
    assert "return (a + b" in repair_prompt  # the model sees its own broken edit


def test_untracked_files_stay_as_they_are_and_the_fix_lands(calc_repo: Path, script) -> None:
    """An untracked file the commit does not add is never touched by a fast-forward: the
    user's notes, and the `__pycache__` their own test run left in a repository that
    ignores none, no longer keep the fix on a branch. Each stays byte for byte."""
    (calc_repo / "notes.txt").write_text("my untracked notes\n")
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=calc_repo,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )
    left = sorted(p.name for p in (calc_repo / "__pycache__").iterdir())
    assert left, "the user's pytest run left no bytecode"
    untracked = {
        rel: (calc_repo / rel).read_bytes()
        for rel in ["notes.txt", *(f"__pycache__/{n}" for n in left)]
    }
    proc = cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 0, proc.stderr
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "accepted" and attempt["branch"] is None, attempt
    assert attempt["commit"] == git(calc_repo, "rev-parse", "HEAD").strip()
    assert {rel: (calc_repo / rel).read_bytes() for rel in untracked} == untracked
    assert git(calc_repo, "status", "--porcelain", "--untracked-files=no") == ""


def test_uncommitted_work_is_untouched_and_the_fix_kept_on_a_branch(
    calc_repo: Path, script
) -> None:
    (calc_repo / "test_calc.py").write_text(TEST_CALC + "\n# my edit in progress\n")
    (calc_repo / "scratch.py").write_text("x = 1\n")
    before = snapshot(calc_repo)
    proc = cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 0, proc.stderr
    assert snapshot(calc_repo) == before
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "accepted"
    branch = attempt["branch"]
    assert branch and branch.startswith("selfforge/")
    assert f"git merge {branch}" in proc.stdout
    shown = git(calc_repo, "show", f"{branch}:calc.py")
    assert "return a + b" in shown
    assert git(calc_repo, "rev-parse", branch).strip() == attempt["commit"]


def test_branch_mode_always_keeps_a_branch(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(land="branch")
    )
    head = git(repo, "rev-parse", "HEAD")
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["branch"]
    assert git(repo, "rev-parse", "HEAD") == head


def test_no_edits_is_its_own_outcome(calc_repo: Path, script) -> None:
    cli("run", "--repo", str(calc_repo), "--model", script(propose=["I cannot help."]), check=True)
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "no_edits"


def test_lint_regressions_are_rejected_naming_the_rule(tmp_path: Path, script) -> None:
    # A stand-in linter: one "path:line: X001 imports os" finding per `import os`.
    lint = "grep -n -H 'import os' *.py | cut -d: -f1,2 | sed 's/$/: X001 imports os/'"
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(lint=lint)
    )
    adds_import = FIX_ADD.replace(
        "def add(a, b):\n    return a + b", "import os\n\n\ndef add(a, b):\n    return a + b"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[adds_import]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected"
    assert "lint" in attempt["reason"] and "X001" in attempt["reason"]
    assert "calc.py" in attempt["reason"]


def test_a_reviewer_veto_rejects(calc_repo: Path, script) -> None:
    spec = script(propose=[FIX_ADD], review=["REJECT: changes behaviour without a docstring"])
    cli("run", "--repo", str(calc_repo), "--model", spec, check=True)
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "rejected"
    assert "docstring" in attempt["reason"]
    assert "return a - b" in (calc_repo / "calc.py").read_text()


def test_show_and_status_read_the_journal(calc_repo: Path, script) -> None:
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    shown = cli("show", "1", "--repo", str(calc_repo), check=True).stdout
    assert "propose" in shown and "<<<<<<< SEARCH" in shown and "+    return a + b" in shown
    status = json.loads(cli("status", "--json", "--repo", str(calc_repo), check=True).stdout)
    assert status["attempts"] == 1 and status["outcomes"] == {"accepted": 1}
    assert status["running"] is False
    assert status["input_tokens"] > 0


def test_state_dir_is_excluded_from_git(calc_repo: Path, script) -> None:
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    assert (calc_repo / ".selfforge" / "journal.db").exists()
    assert "/.selfforge/" in (calc_repo / ".git" / "info" / "exclude").read_text()
    assert git(calc_repo, "status", "--porcelain") == ""
    # Only the worktrees kept for the next run are left, detached: no branch of theirs.
    assert left_worktrees(calc_repo) == (["attempt", "baseline"], 2)
    assert git(calc_repo, "branch", "--list").split() == ["*", "main"]


def test_a_missing_test_tool_is_named_with_the_fix(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(test="no-such-test-runner -q"),
    )
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 1
    assert "no-such-test-runner" in proc.stderr and "[checks] test" in proc.stderr
    assert "Traceback" not in proc.stderr
    status = json.loads(cli("status", "--json", "--repo", str(repo), check=True).stdout)
    assert status["last_run"]["status"] == "failed"


def test_a_model_error_while_planning_is_journaled_and_the_run_goes_on(
    calc_repo: Path, script
) -> None:
    spec = script(plan=[{"error": "rate_limit"}, "1. Fix add()"], propose=[FIX_ADD])
    proc = cli("run", "--repo", str(calc_repo), "--model", spec, "--cycles", "2")
    assert proc.returncode == 0, proc.stderr
    assert "1 accepted" in proc.stdout
    status = json.loads(cli("status", "--json", "--repo", str(calc_repo), check=True).stdout)
    assert status["last_run"]["status"] == "finished"
    assert [a["outcome"] for a in log_json(calc_repo)] == ["accepted"]


def test_undo_reverts_the_last_landed_change(calc_repo: Path, script) -> None:
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    landed = git(calc_repo, "rev-parse", "HEAD").strip()
    proc = cli("undo", "--repo", str(calc_repo))
    assert proc.returncode == 0, proc.stderr
    assert "return a - b" in (calc_repo / "calc.py").read_text()
    assert git(calc_repo, "rev-parse", "HEAD~1").strip() == landed  # a revert commit, on top
    assert "Revert" in git(calc_repo, "log", "-1", "--format=%s")
    again = cli("undo", "--repo", str(calc_repo))
    assert again.returncode == 1 and "nothing to undo" in again.stderr
    [attempt] = log_json(calc_repo)
    assert attempt["reverted_by"] == git(calc_repo, "rev-parse", "HEAD").strip()
    assert cli("export", "--format", "sft", "--repo", str(calc_repo)).stdout.strip() == ""


def test_undo_refuses_when_later_commits_touch_the_same_lines(calc_repo: Path, script) -> None:
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    calc = calc_repo / "calc.py"
    calc.write_text(calc.read_text().replace("return a + b", "return b + a"))
    git(calc_repo, "commit", "-qam", "Swap operands")
    head = git(calc_repo, "rev-parse", "HEAD")
    proc = cli("undo", "--repo", str(calc_repo))
    assert proc.returncode == 1
    assert "later commits touch the same lines" in proc.stderr
    assert "Swap operands" in proc.stderr
    assert git(calc_repo, "rev-parse", "HEAD") == head
    assert git(calc_repo, "status", "--porcelain") == ""


@needs_path_pytest
def test_without_directives_the_detected_checks_guard_the_run(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "tests/test_calc.py": TEST_CALC})
    (repo / "tests" / "conftest.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1]))\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "conftest")
    proc = cli(
        "run",
        "--repo",
        str(repo),
        "--goal",
        "Fix add()",
        "--cycles",
        "1",
        "--model",
        script(propose=[FIX_ADD_BREAK_SUB]),
    )
    assert proc.returncode == 0, proc.stderr
    assert "no selfforge.toml" in proc.stdout and "pytest" in proc.stdout
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected" and "test_sub" in attempt["reason"]


def test_a_reply_in_prose_gets_one_reminder_of_the_edit_format(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(max_repairs=1)
    )
    prose = "The bug is in add(): it subtracts. Change the minus to a plus."
    cli("run", "--repo", str(repo), "--model", script(propose=[prose, FIX_ADD]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["repairs"] == 1
    from selfforge.journal.store import Journal

    with Journal(repo / ".selfforge" / "journal.db") as journal:
        second = [c for c in journal.calls(attempt["id"]) if c["role"] == "propose"][1]
    assert "No edits were found in your reply" in second["prompt"]


def test_landing_never_overwrites_an_ignored_file_of_the_user(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, ".gitignore": "local_settings.py\n"},
        directives(),
    )
    secret = repo / "local_settings.py"
    secret.write_text("DB_PASSWORD = 'hunter2'  # my only copy\n")
    reply = (
        ".gitignore\n<<<<<<< SEARCH\nlocal_settings.py\n=======\n>>>>>>> REPLACE\n\n"
        "local_settings.py\n<<<<<<< SEARCH\n=======\nDEBUG = False\n>>>>>>> REPLACE\n\n"
        + FIX_ADD  # progress on the failing test, so only the landing rule can keep it back
    )
    head = git(repo, "rev-parse", "HEAD")
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[reply]), check=True)
    assert secret.read_text() == "DB_PASSWORD = 'hunter2'  # my only copy\n"
    assert git(repo, "rev-parse", "HEAD") == head
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["branch"]
    assert "local_settings.py" in proc.stdout and "exists" in proc.stdout


def test_the_lint_gate_still_holds_after_a_change_lands(tmp_path: Path, script) -> None:
    lint = "grep -n -H 'import os' *.py | cut -d: -f1,2 | sed 's/$/: X001 imports os/'"
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(lint=lint, cycles=2, goals=("Fix add()", "Tidy mul()")),
    )
    adds_import = """calc.py
<<<<<<< SEARCH
def mul(a, b):
=======
import os


def mul(a, b):
>>>>>>> REPLACE
"""
    spec = script(plan=["1. Fix add()\n2. Tidy mul()"], propose=[FIX_ADD, adds_import])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    first, second = log_json(repo)
    assert first["outcome"] == "accepted"
    assert second["outcome"] == "rejected" and "X001" in second["reason"]


def test_the_commit_holds_exactly_the_checked_change(tmp_path: Path, script) -> None:
    writes_artifact = TEST_CALC + (
        "\n\ndef test_writes_a_report():\n    open('report.txt', 'w').write('made by the tests')\n"
    )
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": writes_artifact}, directives()
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted"
    files = git(repo, "show", "--name-only", "--format=", attempt["commit"]).split()
    assert files == ["calc.py"]
    assert not (repo / "report.txt").exists()
