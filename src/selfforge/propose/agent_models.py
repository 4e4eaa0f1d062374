"""The model an agent proposer is pointed at: a selfforge model spec (``[model]
agent_model``, else the run's) turned into the endpoint, key and variable names each
agent reads; without one, the agent's own configuration decides."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from selfforge.models.spec import parse_spec


@dataclass(frozen=True)
class Endpoint:
    """The model the agent calls: its wire protocol, name, base URL and key (None:
    the agent's own configuration decides)."""

    wire: str  # openai | anthropic | gemini | ollama
    model: str
    base_url: str | None = None
    key: str | None = field(default=None, repr=False)

    @property
    def litellm_name(self) -> str:
        return f"{self.wire}/{self.model}"


def key_env(endpoint: Endpoint | None, names: Mapping[str, str]) -> dict[str, str]:
    """The endpoint's key and base URL under the names the agent reads for its wire."""
    if endpoint is None:
        return {}
    env = {}
    key_name, url_names = names.get(endpoint.wire, ""), names.get(f"{endpoint.wire}_url", "")
    if endpoint.key and key_name:
        env[key_name] = endpoint.key
    if endpoint.base_url:
        env.update(dict.fromkeys(url_names.split(), endpoint.base_url))
    return env


LITELLM_NAMES = {
    "openai": "OPENAI_API_KEY",
    "openai_url": "OPENAI_API_BASE OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_API_KEY",
    "anthropic_url": "ANTHROPIC_API_BASE ANTHROPIC_BASE_URL",
    "gemini": "GEMINI_API_KEY",
    "gemini_url": "GEMINI_API_BASE",
    "ollama": "OLLAMA_API_KEY",
    "ollama_url": "OLLAMA_API_BASE",
}


# litellm's own price list, not one fetched from GitHub at every start.
LITELLM_OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def endpoint_for(spec: str | None) -> Endpoint | None:
    """The agent's model from a selfforge model spec (``openai:gpt-4.1@URL``), its key
    from the variables selfforge reads for that provider; None for none or a script."""
    if not spec or spec.startswith("script:"):
        return None
    from selfforge.models.catalog import key_names, provider_config
    from selfforge.models.secrets import find_key

    parsed = parse_spec(spec)
    wire = provider_config(parsed.provider, os.environ).wire
    found = find_key(key_names(parsed, os.environ), os.environ)
    key = found[1].get_secret_value() if found else None
    if key is None and parsed.base_url:
        key = "none"  # a local server wants none; the agents' clients insist on one
    return Endpoint(wire, parsed.model, parsed.base_url, key)
