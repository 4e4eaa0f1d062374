"""One model-error policy: a model that cannot be used stops the run at once, exit 1, one
line with the provider, the model, the cause and a fix that fits a hosted API or a local
server; and a closed stdout (``| head``) never stops a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from providers import bodies
from selfforge.models.base import AuthError, ModelNotFound, QuotaExhausted
from selfforge.models.http import unreachable
from selfforge.models.policy import ModelFailure, classify

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, make_repo
from provider_fakes import fake_anthropic, fake_gemini, fake_ollama, fake_openai

ROLES = '\n[roles]\nenabled = ["propose", "review"]\n'
# What each provider answers for a model it does not know (their real bodies).
UNKNOWN_MODEL = {
    "openai": lambda m: bodies.openai_error(
        404,
        f"The model `{m}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
    "gemini": lambda m: bodies.gemini_error(
        404, "NOT_FOUND", f"models/{m} is not found for API version v1beta"
    ),
    "anthropic": lambda m: bodies.anthropic_error(404, "not_found_error", f"model: {m}"),
    "ollama": lambda m: bodies.ollama_error(404, f'model "{m}" not found, try pulling it first'),
}
FAKES = {"openai": fake_openai, "gemini": fake_gemini, "anthropic": fake_anthropic}
FAKES["ollama"] = fake_ollama


def _repo(tmp_path: Path, cycles: int = 3) -> Path:
    return make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(extra=ROLES, cycles=cycles),
    )


@pytest.mark.parametrize("wire", sorted(UNKNOWN_MODEL))
def test_an_unknown_model_stops_the_run_at_the_first_call(
    wire: str, httpserver: HTTPServer, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    fake = FAKES[wire](httpserver)
    fake.faults.extend([lambda: UNKNOWN_MODEL[wire](fake.model_name)] * 5)
    proc = cli("run", "--repo", str(repo), "--model", fake.spec, "--json", env=fake.env)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a CI job fails on a typo
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert fake.spec in line and "not found" in line and "a local server" in line
    fix = "ollama pull" if wire == "ollama" else "load it in the server"
    assert fix in line and "Traceback" not in proc.stderr
    assert len(fake.requests) == 1  # stopped at the first such error, never retried
    events = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert events[-1]["event"] == "error" and events[-1]["exit_code"] == 1
    assert "not found" in events[-1]["message"]
    status = json.loads(cli("status", "--json", "--repo", str(repo)).stdout)
    assert status["last_run"]["status"] == "failed"


def test_a_quota_at_the_first_call_fails_but_after_work_it_stops_cleanly(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    fake = fake_openai(httpserver)
    fake.daily_quota()
    proc = cli("run", "--repo", str(repo), "--model", fake.spec, env=fake.env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "wait for it to reset" in proc.stderr

    httpserver.clear()
    repo = _repo(tmp_path / "second")
    fake = fake_openai(httpserver)
    fake.faults.append(lambda: fake._success())  # the proposal is answered...
    fake.daily_quota()  # ...then the quota runs out: the run did its work up to the limit
    fake.reply(FIX_ADD)
    proc = cli("run", "--repo", str(repo), "--model", fake.spec, env=fake.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    status = json.loads(cli("status", "--json", "--repo", str(repo)).stdout)
    assert status["last_run"]["status"] == "stopped"


def test_the_fix_fits_a_hosted_api() -> None:
    spec = "gemini:gemini-2.5-flsh"
    missing = ModelNotFound("gemini gemini-2.5-flsh: the model was not found (404): x; check")
    text = ModelFailure.from_error(missing, spec).message
    assert "a hosted API" in text and "fix the model name" in text
    assert f"selfforge models --model {spec}" in text and "start the" not in text
    auth = AuthError("gemini: GEMINI_API_KEY was rejected (403): denied; check the key at URL")
    text = ModelFailure.from_error(auth, spec).message
    assert "GEMINI_API_KEY" in text and "check the key at URL" in text

    hosted = unreachable("openai", "https://api.openai.com/v1", OSError("connection refused"))
    assert "start the model server" not in hosted.message and "proxy" in hosted.message
    local = unreachable("openai", "http://127.0.0.1:9/v1", OSError("connection refused"))
    assert "start the model server" in local.message
    text = ModelFailure.from_error(local, "openai:m@http://127.0.0.1:9/v1").message
    assert "a local server" in text and "llama-server" in text


def test_one_classification_for_every_call_site() -> None:
    assert classify(ModelNotFound("x"), answered=3) == "fail"
    assert classify(QuotaExhausted("q"), answered=0) == "fail"
    assert classify(QuotaExhausted("q"), answered=1) == "stop"


@pytest.mark.parametrize("debug", [False, True])
def test_a_closed_stdout_never_stops_the_run(debug: bool, tmp_path: Path) -> None:
    repo = _repo(tmp_path, cycles=2)
    spec_file = tmp_path / "script.json"
    spec_file.write_text(json.dumps({"propose": ["", FIX_ADD]}))
    head = git(repo, "rev-parse", "HEAD")
    selfforge = [sys.executable, "-m", "selfforge", *(["--debug"] if debug else [])]
    command = " ".join([*selfforge, "run", "--repo", str(repo), "--model", f"script:{spec_file}"])
    # A real pipe whose reader leaves after one line, as `| head -n 1` does.
    proc = subprocess.run(
        ["bash", "-c", f"{command} | head -n 1; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert len(proc.stdout.splitlines()) == 1
    assert proc.returncode == 0, proc.stderr
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr
    assert git(repo, "rev-parse", "HEAD") != head  # the fix of cycle 2 landed
    status = json.loads(cli("status", "--json", "--repo", str(repo)).stdout)
    assert status["last_run"]["status"] == "finished"
    log = json.loads(cli("log", "--json", "--repo", str(repo)).stdout)
    assert [a["outcome"] for a in log] == ["no_edits", "accepted"]
