"""Runs against real local HTTP servers that speak each provider's wire protocol."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from selfforge.journal.store import Journal

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, log_json, make_repo
from provider_fakes import (
    TEST_KEY,
    FakeProvider,
    _quiet_config_dir,
    fake_anthropic,
    fake_gemini,
    fake_openai,
)

FAKES = {"gemini": fake_gemini, "openai": fake_openai, "anthropic": fake_anthropic}
# What each provider's long-window limit is called (Anthropic's is the credit balance).
LIMIT_WORDS = {
    "gemini": ("per-day", "resets"),
    "openai": ("per-day", "resets"),
    "anthropic": ("cannot spend more", "credit"),
}
ROLES = '\n[roles]\nenabled = ["propose", "review"]\n'


def _repo(tmp_path: Path) -> Path:
    # The check prints its environment: it is journaled with the check's output.
    test = f"env && {sys.executable} -m pytest -q"
    return make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(test=test, extra=ROLES),
    )


def _fake(wire: str, server: HTTPServer) -> FakeProvider:
    fake = FAKES[wire](server)
    fake.answer_when("Review this change", "APPROVE: add() now adds")
    return fake


def _run(repo: Path, fake: FakeProvider) -> tuple[int, str]:
    proc = cli("run", "--repo", str(repo), "--model", fake.spec, env=fake.env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("wire", sorted(FAKES))
def test_a_fix_lands_through_the_provider_after_a_429(
    wire: str, httpserver: HTTPServer, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    fake = _fake(wire, httpserver)
    fake.rate_limit_once(retry_s=0.6)
    # The model also echoes the key back: it must be masked wherever it is stored.
    fake.reply(f"Using key {TEST_KEY} to help.\n\n{FIX_ADD}")
    code, output = _run(repo, fake)
    assert code == 0, output

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt["reason"]
    assert "return a + b" in (repo / "calc.py").read_text()
    with Journal(repo / ".selfforge" / "journal.db") as journal:
        [propose] = [c for c in journal.calls(attempt["id"]) if c["role"] == "propose"]
    assert propose["latency_s"] >= 0.6  # waited out the retry hint, then retried
    assert propose["input_tokens"] > 0 and propose["output_tokens"] > 0
    assert propose["cost_usd"] is not None

    # The key is nowhere: not in output, .selfforge/, nor the checks' environment.
    assert TEST_KEY not in output
    for path in (repo / ".selfforge").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path
    with Journal(repo / ".selfforge" / "journal.db") as journal:
        dumped = "".join(c["output"] for c in journal.checks(attempt["id"]))
    assert "PATH=" in dumped and "GEMINI_API_KEY" not in dumped and "OPENAI" not in dumped


@pytest.mark.parametrize("wire", sorted(FAKES))
def test_a_per_day_quota_stops_the_run_cleanly(
    wire: str, httpserver: HTTPServer, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    fake = _fake(wire, httpserver)
    # The proposal is answered, then the quota runs out at the review: a clean stop (a
    # quota already used up at the run's first call is a failure: test_model_errors_cli).
    fake.faults.append(fake._success)
    fake.daily_quota()
    fake.reply(FIX_ADD)
    head = git(repo, "rev-parse", "HEAD")
    code, output = _run(repo, fake)
    assert code == 0, output
    assert all(word in output for word in LIMIT_WORDS[wire])
    assert "Traceback" not in output
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    status = json.loads(cli("status", "--json", "--repo", str(repo)).stdout)
    assert status["last_run"]["status"] == "stopped"
    reason = status["last_run"]["stop_reason"]
    assert all(word in reason for word in LIMIT_WORDS[wire])
    assert len(fake.requests) == 2  # no retry on a per-day quota


def test_an_invalid_key_stops_with_what_to_fix(httpserver: HTTPServer, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    fake = _fake("gemini", httpserver)
    fake.auth_failure()
    code, output = _run(repo, fake)
    assert code == 1, output  # the run cannot go on: stop, naming the cause and the fix
    assert "GEMINI_API_KEY" in output
    assert TEST_KEY not in output
    assert len(fake.requests) == 1  # an invalid key is never retried


def test_a_dead_server_is_a_clear_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    spec = "openai:gpt-4.1-mini@http://127.0.0.1:9/v1"
    env = {"OPENAI_API_KEY": TEST_KEY, "SELFFORGE_CONFIG_DIR": str(_quiet_config_dir())}
    proc = cli("run", "--repo", str(repo), "--model", spec, env=env)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output
    assert "cannot reach 127.0.0.1:9 (connection refused)" in output
    assert proc.returncode == 1  # not a finished run: nothing was attempted
    assert not (repo / ".selfforge" / "journal.db").exists()
