"""Everyday CLI habits, through the real CLI on real repositories: --version, -h, show
last/-N, log filters, exit codes under --help, status wording, check labels in `show`,
text in square brackets kept, reasons never cut."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from selfforge.cli.exit_codes import EXIT_CODES

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    TEST_CALC,
    cli,
    directives,
    log_json,
    make_repo,
)


@pytest.fixture(scope="module")
def two_attempts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rejected attempt (breaks test_sub), then one accepted. Shared by the tests of
    this module that only read it; a test that writes to it works on a copy."""
    tmp = tmp_path_factory.mktemp("two-attempts")
    repo = make_repo(tmp / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(cycles=2))
    spec = tmp / "script.json"
    spec.write_text(json.dumps({"propose": [FIX_ADD_BREAK_SUB, FIX_ADD], "plan": ["1. Fix add()"]}))
    cli("run", "--repo", str(repo), "--model", f"script:{spec}", check=True)
    assert [a["outcome"] for a in log_json(repo)] == ["rejected", "accepted"]
    return repo


def test_version_and_short_help() -> None:
    version = cli("--version", check=True).stdout
    assert re.fullmatch(r"selfforge \d+\.\d+\S*\n", version)
    assert cli("-V", check=True).stdout == version
    top = cli("-h", check=True).stdout
    assert "Commands" in top and "run" in top and "--install-completion" in top
    assert "selfforge run [OPTIONS]" in cli("run", "-h", check=True).stdout


@pytest.mark.parametrize("command", ["run", "log", "show", "undo", "doctor", "apply-edits"])
def test_every_command_documents_its_exit_codes(command: str) -> None:
    text = " ".join(cli(command, "--help", check=True).stdout.split())
    assert "Exit codes: " + " ".join(EXIT_CODES[command].split()) in text


def test_each_command_is_found_in_the_module_the_cli_loads_for_it() -> None:
    """`selfforge run` loads only the module that registers `run` (the rest of the app is a
    third of a small judged change's overhead): the table must name every command's home."""
    import importlib

    import typer

    from selfforge.cli.program import COMMAND_HOMES, COMMAND_MODULES

    found: dict[str, str] = {}
    for module in COMMAND_MODULES:
        app = typer.Typer()
        importlib.import_module(module).register(app)
        names = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
        names += [g.name for g in app.registered_groups]
        found.update(dict.fromkeys(names, module))
    assert found == COMMAND_HOMES


def test_a_command_loads_only_its_own_module_and_root_options_still_work() -> None:
    from selfforge.cli.program import COMMAND_MODULES

    probe = (
        "import sys; from selfforge.cli.program import main\n"
        "sys.argv = ['selfforge', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('selfforge.cli.commands.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, "--debug", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "selfforge run [OPTIONS]" in out
    loaded = out.splitlines()[-1]
    assert "'selfforge.cli.commands.core'" in loaded
    assert not any(f"'{m}'" in loaded for m in COMMAND_MODULES if not m.endswith(".core"))
    top = subprocess.run(
        [sys.executable, "-c", probe, "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "selfforge.cli.commands.bench" in top.splitlines()[-1] and "doctor" in top
    wrong = cli("rnu")
    assert wrong.returncode == 2 and "No such command" in wrong.stderr


def test_shell_completion_script_is_offered() -> None:
    # Typer's own switch: name the shell instead of guessing it from the parent processes
    # (which are not a shell when the suite runs from a service or a script).
    env = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    proc = cli("--show-completion", "bash", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "complete" in proc.stdout and "selfforge" in proc.stdout


def test_show_last_and_counting_back(two_attempts: Path) -> None:
    repo = ["--repo", str(two_attempts)]
    last = cli("show", "last", *repo, check=True).stdout
    assert last.startswith("attempt 2 ")
    assert cli("show", "-1", *repo, check=True).stdout == last
    assert cli("show", "-2", *repo, check=True).stdout.startswith("attempt 1 ")
    for bad, words in (("-3", "only 2 attempt(s)"), ("9", "no attempt 9"), ("x", "`last`")):
        proc = cli("show", bad, *repo)
        assert proc.returncode == 2 and words in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_log_filters(two_attempts: Path) -> None:
    repo = ["--repo", str(two_attempts)]

    def ids(*args: str) -> list[int]:
        rows = json.loads(cli("log", "--json", *repo, *args, check=True).stdout)
        return [row["id"] for row in rows]

    assert ids() == [1, 2]
    assert ids("-n", "1") == [2]
    assert ids("--outcome", "accepted") == [2]
    assert ids("--outcome", "rejected", "-n", "5") == [1]
    assert ids("--since", "1h") == [1, 2]
    assert ids("--since", "2000-01-01") == [1, 2]
    assert ids("--since", "2999-01-01") == []
    table = cli("log", *repo, "--outcome", "accepted", check=True).stdout
    assert "1 of 2 attempt(s)" in table
    for args, words in ((["--outcome", "won"], "accepted, rejected"), (["--since", "soon"], "2h")):
        proc = cli("log", *repo, *args)
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr


def test_since_and_until_read_durations_with_the_one_parser() -> None:
    from selfforge.cli.commands.history import parse_since
    from selfforge.models.durations import parse_duration

    assert parse_duration("3d") == 3 * 86400 and parse_duration("1d 2h30m") == 95400
    assert parse_duration("90m") == 5400 and parse_duration("500ms") == 0.5
    assert parse_duration("3 days") is None and parse_duration("soon") is None
    # log --since 3d is that many seconds before now (the clock moves on while it runs).
    assert parse_since("3d") <= parse_since("2d") - 86400 + 1


def test_status_words_the_last_run_and_never_prints_none(two_attempts: Path, tmp_path) -> None:
    two_attempts = shutil.copytree(two_attempts, tmp_path / "copy")
    out = cli("status", "--repo", str(two_attempts), check=True).stdout
    assert "None" not in out
    assert re.search(r"last: run 1, finished \(started [\d-]+ [\d:]+\): the backlog", out) or (
        "last: run 1, finished" in out
    )
    # A run whose process died before closing its record: say so, not "running — None".
    db = two_attempts / ".selfforge" / "journal.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO runs (started_at, status, goals) VALUES (strftime('%s','now'), "
            "'running', '[]')"
        )
    out = cli("status", "--repo", str(two_attempts), check=True).stdout
    assert "None" not in out and "stopped without closing its record" in out


def test_show_labels_a_passing_test_stage_pass_even_when_old_failures_exit_1(
    tmp_path: Path, script
) -> None:
    """A suite with a test that already failed exits 1; the stage still passed."""
    failing = TEST_CALC + "\n\ndef test_known_bad():\n    assert False\n"
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": failing}, directives())
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted"
    out = cli("show", "last", "--repo", str(repo), check=True).stdout
    [tests_line] = [line for line in out.splitlines() if line.startswith("── check tests ")]
    assert "pass" in tests_line and "exit 1" in tests_line and "fail (" not in tests_line


def test_square_brackets_survive_and_reasons_are_whole(tmp_path: Path, script) -> None:
    """A goal and a reviewer's reason with [brackets]; the reason longer than a screen."""
    long_reason = "[checks] is wrong here: " + " ".join(f"point{i}" for i in range(120))
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(goals=("Fix add() per [checks] and [bold]rules[/bold]",)),
    )
    spec = script(propose=[FIX_ADD], review=[f"REJECT: {long_reason}"])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected"
    assert long_reason in attempt["reason"] and len(attempt["reason"]) > 600
    shown = cli("show", "1", "--repo", str(repo), check=True).stdout
    assert long_reason in " ".join(shown.split())
    assert "[bold]rules[/bold]" in shown and "[checks]" in shown
    table = cli("log", "--repo", str(repo), check=True).stdout
    assert "[checks]" in table


def test_the_loop_s_own_messages_keep_their_section_names(tmp_path: Path, script) -> None:
    """No test passes on the unmodified code: the warning names [checks] test, visibly."""
    all_fail = "def test_a():\n    assert False\n\n\ndef test_b():\n    assert False\n"
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": all_fail}, directives())
    for args in ([], ["--json"]):
        proc = cli("run", *args, "--repo", str(repo), "--model", script(), check=True)
        assert "check [checks] test" in proc.stdout


def test_plan_shows_task_text_in_brackets(calc_repo: Path) -> None:
    repo = ["--repo", str(calc_repo)]
    added = cli("plan", "add", "Read [checks] and [bold]x[/bold]", *repo, check=True).stdout
    assert "[checks] and [bold]x[/bold]" in added
    assert "[checks]" in cli("plan", *repo, check=True).stdout


def test_a_critic_s_long_reason_is_kept_whole(tmp_path: Path, script) -> None:
    concern = "[style] " + " ".join(f"concern{i}" for i in range(80))
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(max_repairs=1)
    )
    spec = script(propose=[FIX_ADD, ""], critique=[concern])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected" and concern in attempt["reason"]
