"""The check runner and parsers, on real subprocesses and real files."""

from __future__ import annotations

import time
from pathlib import Path

from selfforge.judge.rules.lint import new_findings, parse_lint
from selfforge.judge.rules.syntax import check_syntax, complexity_findings
from selfforge.judge.runners.results import parse_unittest
from selfforge.judge.sandbox.command import CheckSpace, anchor_command, run_command, trim


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    command = f"sh -c 'echo $$ > {pidfile}; sleep 30' & sleep 30"
    result = run_command(command, tmp_path, 0.5, CheckSpace(repo=tmp_path, mode="off"))
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 10
    assert "timeout" in result.output
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not _running(child), "the background grandchild survived the timeout"


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for its parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_api_keys_do_not_reach_check_commands(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-secret-value-123456")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abc")
    result = run_command("env", tmp_path, 10, CheckSpace(repo=tmp_path, mode="off"))
    assert "AIza-secret-value-123456" not in result.output
    assert "GEMINI_API_KEY" not in result.output and "MY_SERVICE_TOKEN" not in result.output
    assert "PATH=" in result.output


def test_long_output_keeps_head_and_tail_and_says_what_was_cut() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    out = trim(text, head=5, tail=5)
    assert out.startswith("line 0") and out.endswith("line 999")
    assert "[... 990 lines cut ...]" in out


def test_syntax_errors_name_file_line_and_text(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f(:\n    pass\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    [problem] = check_syntax(tmp_path, ["a.py", "b.py", "gone.py", "notes.txt"])
    assert (problem.path, problem.line) == ("a.py", 1)
    assert "def f(:" in str(problem)


def test_lint_findings_survive_line_shifts_but_new_ones_count() -> None:
    before = parse_lint("a.py:3:1: F401 `os` imported but unused\n", 1)
    after = parse_lint(
        "a.py:9:1: F401 `os` imported but unused\na.py:12:5: E711 comparison to None\n", 1
    )
    assert [str(f) for f in new_findings(before, after)] == ["a.py:12: E711 comparison to None"]
    assert parse_lint("", 0) == []
    assert parse_lint("something odd", 2)[0].message.startswith("lint command failed")


def test_unittest_verbose_output_gives_per_test_outcomes() -> None:
    output = (
        "test_a (t.T.test_a) ... ok\ntest_b (t.T.test_b) ... FAIL\n\n"
        "======\nFAIL: test_b (t.T.test_b)\n------\nTraceback (most recent call last):\n"
        '  File "t.py", line 3\nAssertionError: 1 != 2\n\n------\nRan 2 tests\n\nFAILED\n'
    )
    report = parse_unittest(output)
    assert report is not None
    assert report.outcomes == {"t.T.test_a": "passed", "t.T.test_b": "failed"}
    assert report.messages["t.T.test_b"] == "AssertionError: 1 != 2"
    assert parse_unittest("no tests here") is None


def test_complex_functions_are_reported_for_the_critic(tmp_path: Path) -> None:
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(12))
    (tmp_path / "m.py").write_text(
        f"def simple(x):\n    return x\n\n\ndef tangled(x):\n{branches}\n"
    )
    [finding] = complexity_findings(tmp_path, ["m.py"])
    assert finding.startswith("m.py:5: tangled()") and "complexity 13" in finding


def test_relative_executables_are_taken_from_the_users_checkout(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "pytest").write_text("")
    anchored = anchor_command("CI=1 .venv/bin/pytest -q", tmp_path)
    assert anchored == f"CI=1 {tmp_path.resolve()}/.venv/bin/pytest -q"
    assert anchor_command("python -m pytest", tmp_path) == "python -m pytest"
    assert anchor_command("./missing.sh", tmp_path) == "./missing.sh"
