"""Finding a model when none is configured: a key in the environment, else local Ollama."""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from selfforge.models.catalog import load_catalog, ollama_base_url
from selfforge.models.secrets import find_key, keys_file

# Checked in this order; the first provider with a key wins.
KEY_ORDER: tuple[tuple[str, str], ...] = (
    ("gemini", "GEMINI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("openai", "OPENAI_API_KEY"),
)
PROBE_TIMEOUT_S = 0.5


def choose_default_spec(env: Mapping[str, str] | None = None) -> str | None:
    """A spec for the first configured provider, or None when nothing is configured."""
    env = os.environ if env is None else env
    catalog = load_catalog(env)
    for provider, variable in KEY_ORDER:
        if find_key([variable], env):
            return f"{provider}:{catalog.providers[provider].default_model}"
    return _ollama_spec(env)


def ollama_models(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> list[str] | None:
    """Names of the models a reachable Ollama server has pulled; None if unreachable."""
    try:
        response = httpx.get(f"{base_url}/api/tags", timeout=timeout_s)
        response.raise_for_status()
        models = response.json().get("models") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]


def no_model_message(env: Mapping[str, str] | None = None) -> str:
    """What to tell a user who has configured no model at all."""
    return (
        "no model is configured: set GEMINI_API_KEY (a free key: "
        "https://aistudio.google.com/apikey), ANTHROPIC_API_KEY or OPENAI_API_KEY, "
        f"or put it in {keys_file(env)}; or start Ollama (`ollama serve` and "
        "`ollama pull qwen2.5-coder:7b`); or pass --model SPEC, e.g. "
        "--model openai:my-model@http://localhost:8000/v1"
    )


def _ollama_spec(env: Mapping[str, str]) -> str | None:
    base = ollama_base_url(env)
    models = ollama_models(base)
    if not models:
        return None
    preferred = load_catalog(env).providers["ollama"].default_model
    name = preferred if preferred in models else models[0]
    default_base = load_catalog(env).providers["ollama"].base_url.rstrip("/")
    return f"ollama:{name}" + ("" if base == default_base else f"@{base}")
