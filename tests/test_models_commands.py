"""`selfforge models` and `selfforge doctor` through the real CLI app."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from selfforge.cli.program import app

from provider_fakes import TEST_KEY, fake_gemini, fake_ollama


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def invoke(args: list[str], env: dict[str, str]):
    base = {
        "SELFFORGE_CONFIG_DIR": env.get("SELFFORGE_CONFIG_DIR", "/nonexistent"),
        "OLLAMA_HOST": "127.0.0.1:9",
    }
    blank = {
        name: ""
        for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    return CliRunner().invoke(app, args, env={**blank, **base, **env})


def test_models_lists_what_the_server_offers(httpserver) -> None:
    fake = fake_gemini(httpserver)
    result = invoke(["models", "--model", fake.spec], fake.env)
    assert result.exit_code == 0, result.output
    assert "gemini-2.5-flash  <- configured" in result.output


def test_doctor_all_good(httpserver, repo) -> None:
    fake = fake_ollama(httpserver)
    (repo / "selfforge.toml").write_text(
        f'[checks]\ntest = "git --version"\ntests = "none"\n\n[model]\nspec = "{fake.spec}"\n'
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "selfforge.toml"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "directives"], cwd=repo, check=True)
    result = invoke(["doctor", "--repo", str(repo)], fake.env)
    assert result.exit_code == 0, result.output
    assert "connected, key accepted" in result.output and "ready for run." in result.output


def test_doctor_reports_what_to_fix(httpserver, repo) -> None:
    fake = fake_gemini(httpserver)
    (repo / "selfforge.toml").write_text(
        '[checks]\ntest = "no-such-tool-xyz --run"\nlint = "LC_ALL=C git status"\n\n'
        f'[model]\nspec = "{fake.spec}"\n'
    )
    env = {**fake.env, "GEMINI_API_KEY": "a-wrong-key-123456"}
    result = invoke(["doctor", "--repo", str(repo)], env)
    assert result.exit_code == 1
    assert "FAIL test check: 'no-such-tool-xyz' not found on PATH" in result.output
    assert "ok   lint check" in result.output
    assert "GEMINI_API_KEY was rejected" in result.output
    assert "a-wrong-key-123456" not in result.output and TEST_KEY not in result.output


def test_doctor_without_any_model_says_how_to_configure_one(tmp_path, repo) -> None:
    result = invoke(["doctor", "--repo", str(repo)], {"SELFFORGE_CONFIG_DIR": str(tmp_path)})
    assert result.exit_code == 1
    assert "no model is configured" in result.output and "warn directives" in result.output


def test_doctor_flags_a_key_written_into_the_directives(repo, tmp_path) -> None:
    key = "AIza" + "Q" * 35
    (repo / "selfforge.toml").write_text(f'[model]\nspec = "script:{tmp_path}/s.json"\n# {key}\n')
    result = invoke(["doctor", "--repo", str(repo)], {"SELFFORGE_CONFIG_DIR": str(tmp_path)})
    assert "FAIL secrets: selfforge.toml holds an API key" in result.output
    assert key not in result.output
    assert "script model file not found" in result.output
