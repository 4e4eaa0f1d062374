"""Models: the protocol, spec parsing, and the provider registry.

May import errors only: every other part stands on the models.
"""

from __future__ import annotations

import importlib
from typing import Any

from selfforge.models.base import (
    ROLES,
    Message,
    Model,
    ModelError,
    Reply,
    Request,
    Usage,
)
from selfforge.models.spec import ModelSpec, parse_spec

__all__ = [
    "ROLES",
    "Message",
    "Model",
    "ModelError",
    "ModelSpec",
    "Reply",
    "Request",
    "Usage",
    "choose_default_spec",
    "from_spec",
    "no_model_message",
    "parse_spec",
]

# provider name -> "module:Class" for providers that are not network clients; every
# other provider is listed in catalog.toml and built by factory.build.
PROVIDERS: dict[str, str] = {
    "script": "selfforge.models.script:ScriptModel",
}


def from_spec(spec: str, **settings: Any) -> Model:
    """Build the model a spec names, with retries, pacing and cost for network providers.

    ``settings`` (ignored by the scripted model): requests_per_minute, timeout_s,
    max_retries, backoff_base_s, backoff_cap_s, max_wait_s, budget, env, on_wait, generation,
    sleep and clock (tests: waits that take no real time).
    """
    parsed = parse_spec(spec)
    target = PROVIDERS.get(parsed.provider)
    if target is None:
        from selfforge.models.factory import build  # httpx and prices load only when needed

        return build(parsed, **settings)
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(parsed.model)


def choose_default_spec(env: Any = None) -> str | None:
    """The first configured model (see ``discover``), or None."""
    from selfforge.models.discover import choose_default_spec as choose

    return choose(env)


def no_model_message(env: Any = None) -> str:
    from selfforge.models.discover import no_model_message as message

    return message(env)
