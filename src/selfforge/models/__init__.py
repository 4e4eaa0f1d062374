"""Models: the protocol, spec parsing, and the provider registry."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from selfforge.errors import UsageError
from selfforge.models.base import (
    ROLES,
    Message,
    Model,
    ModelError,
    Reply,
    Request,
    Usage,
)

__all__ = [
    "ROLES",
    "Message",
    "Model",
    "ModelError",
    "ModelSpec",
    "Reply",
    "Request",
    "Usage",
    "from_spec",
    "parse_spec",
]

# provider name -> "module:Class"; each class takes (spec: ModelSpec) and fits Model.
PROVIDERS: dict[str, str] = {
    "script": "selfforge.models.script:ScriptModel",
}


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        at = f"@{self.base_url}" if self.base_url else ""
        return f"{self.provider}:{self.model}{at}"


def parse_spec(spec: str) -> ModelSpec:
    """Parse ``PROVIDER:MODEL[@BASE_URL]`` (DESIGN.md §2)."""
    provider, sep, rest = spec.strip().partition(":")
    if not sep or not provider or not rest:
        raise UsageError(
            f"bad model spec {spec!r}: write PROVIDER:MODEL[@BASE_URL], "
            "e.g. gemini:gemini-2.5-flash or script:replies.json"
        )
    provider = provider.lower()
    base_url = None
    if provider != "script" and "@" in rest:
        model, _, url = rest.rpartition("@")
        if url.startswith(("http://", "https://")):
            rest, base_url = model, url.rstrip("/")
    return ModelSpec(provider=provider, model=rest, base_url=base_url)


def from_spec(spec: str) -> Model:
    """Build the model a spec names."""
    parsed = parse_spec(spec)
    target = PROVIDERS.get(parsed.provider)
    if target is None:
        known = ", ".join(sorted(PROVIDERS))
        raise UsageError(f"unknown model provider {parsed.provider!r} in {spec!r}; use: {known}")
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if parsed.provider == "script":
        return cls(parsed.model)
    return cls(parsed)
