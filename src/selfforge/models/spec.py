"""Model specs: ``PROVIDER:MODEL[@BASE_URL]`` (DESIGN.md §2)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from selfforge.errors import UsageError


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        at = f"@{self.base_url}" if self.base_url else ""
        return f"{self.provider}:{self.model}{at}"

    @property
    def host(self) -> str | None:
        return urlsplit(self.base_url).hostname if self.base_url else None

    @property
    def is_local(self) -> bool:
        """Whether @BASE_URL names this machine or a private network."""
        host = self.host
        if not host:
            return False
        if host == "localhost" or host.endswith(".local"):
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return address.is_loopback or address.is_private


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
