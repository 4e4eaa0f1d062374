"""The catalog data file, user overrides, key routing, and choosing a default model."""

from __future__ import annotations

import pytest

from selfforge.errors import ConfigError, UsageError
from selfforge.models import choose_default_spec, from_spec, no_model_message, parse_spec
from selfforge.models.catalog import key_names, model_facts

from provider_fakes import fake_ollama


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    # OLLAMA_HOST at a closed port: no test may find a real local Ollama.
    return {"SELFFORGE_CONFIG_DIR": str(tmp_path), "OLLAMA_HOST": "127.0.0.1:9"}


def test_facts_come_from_the_bundled_catalog(env) -> None:
    facts = model_facts("gemini:gemini-2.5-flash", env)
    assert facts.context_window == 1048576 and facts.edit_format == "search_replace"
    assert facts.requests_per_minute is not None and facts.requests_per_minute < 10
    assert model_facts("anthropic:claude-sonnet-4-5", env).context_window == 200000
    unknown = model_facts("vllm:some/local-model", env)
    assert unknown.context_window == 32768 and unknown.requests_per_minute is None


def test_user_file_overrides_and_inherits(env, tmp_path) -> None:
    (tmp_path / "models.toml").write_text(
        '[providers.gemini]\ndefault_model = "gemini-2.5-pro"\n\n'
        '[[models]]\nmatch = "ollama:my-model*"\ncontext_window = 65536\n'
    )
    facts = model_facts("ollama:my-model:latest", env)
    assert facts.context_window == 65536 and facts.max_output_tokens == 8192
    assert choose_default_spec({**env, "GEMINI_API_KEY": "k" * 20}) == "gemini:gemini-2.5-pro"


def test_user_file_errors_name_the_file_and_key(env, tmp_path) -> None:
    (tmp_path / "models.toml").write_text('[[models]]\nmatch = "*"\ncontext_windw = 5\n')
    with pytest.raises(ConfigError, match=r"models\.toml: models\[0\]\.context_windw"):
        model_facts("gemini:x", env)


def test_keys_go_only_to_their_own_hosts(env) -> None:
    assert key_names(parse_spec("openai:gpt-4.1-mini"), env) == ("OPENAI_API_KEY",)
    gemini_compat = parse_spec(
        "openai:gemini-2.5-flash@https://generativelanguage.googleapis.com/v1beta/openai"
    )
    assert key_names(gemini_compat, env)[0] == "GEMINI_API_KEY"
    # An OpenAI key never goes to some other server named by @BASE_URL.
    assert key_names(parse_spec("openai:m@https://llm.example.com/v1"), env) == (
        "OPENAI_COMPAT_API_KEY",
    )


def test_default_spec_order_and_none(env) -> None:
    assert choose_default_spec(env) is None
    both = {**env, "OPENAI_API_KEY": "o" * 20, "ANTHROPIC_API_KEY": "a" * 20}
    assert choose_default_spec(both) == "anthropic:claude-sonnet-4-5"
    assert choose_default_spec({**both, "GEMINI_API_KEY": "g" * 20}) == "gemini:gemini-2.5-flash"
    assert "GEMINI_API_KEY" in no_model_message(env) and "ollama" in no_model_message(env)


def test_default_spec_reads_the_user_keys_file(env, tmp_path) -> None:
    (tmp_path / "keys.toml").write_text('OPENAI_API_KEY = "sk-from-file-0123"\n')
    assert choose_default_spec(env) == "openai:gpt-4.1-mini"


def test_default_spec_finds_a_running_ollama(env, httpserver) -> None:
    fake = fake_ollama(httpserver)
    host = fake.base_url.removeprefix("http://")
    spec = choose_default_spec({**env, "OLLAMA_HOST": host})
    assert spec == f"ollama:qwen2.5-coder:7b@{fake.base_url}"


def test_unknown_provider_lists_the_known_ones(env) -> None:
    with pytest.raises(UsageError, match=r"unknown model provider 'nope'.*gemini.*script"):
        from_spec("nope:model", env=env)


def test_script_specs_still_build_the_scripted_model(tmp_path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"propose": ["x"]}')
    model = from_spec(f"script:{script}", requests_per_minute=5)
    assert model.spec == f"script:{script}"


def test_local_servers_get_a_long_default_timeout(env) -> None:
    def timeout(spec: str, **settings) -> float:
        return from_spec(
            spec, env={**env, "GEMINI_API_KEY": "g" * 20}, **settings
        ).client.transport.timeout_s

    assert timeout("ollama:qwen2.5-coder:7b") == 600
    assert timeout("openai:m@http://127.0.0.1:8000/v1") == 600
    assert timeout("gemini:gemini-2.5-flash") == 120
    assert timeout("ollama:qwen2.5-coder:7b", timeout_s=30) == 30
