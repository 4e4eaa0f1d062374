"""One real call to a model, to show what a run will work with: reachable, window, output
cap, latency, speed (``selfforge models --probe`` and ``doctor``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from selfforge.models.base import Message, ModelError, Request
from selfforge.models.managed import ManagedModel

PROBE_PROMPT = "Count from 1 to 30, separated by spaces. Reply with the numbers only."
PROBE_OUTPUT_TOKENS = 96


@dataclass
class Probe:
    spec: str
    reachable: bool
    error: str = ""
    window: int | None = None
    window_from: str = ""  # "the server" or "the catalog"
    max_output: int | None = None  # per propose call
    latency_s: float | None = None
    output_tokens: int = 0
    truncated: bool = False

    @property
    def tokens_per_s(self) -> float | None:
        if not self.latency_s or not self.output_tokens:
            return None
        return self.output_tokens / self.latency_s

    def lines(self) -> list[str]:
        if not self.reachable:
            return [f"model:      {self.spec}", f"reachable:  no: {self.error}"]
        speed = f"{self.tokens_per_s:.0f} tokens/s" if self.tokens_per_s else "unknown"
        return [
            f"model:      {self.spec}",
            "reachable:  yes",
            f"context:    {self.window} tokens (from {self.window_from})",
            f"max output: {self.max_output} tokens per propose call",
            f"latency:    {self.latency_s:.2f} s for one call of {self.output_tokens} tokens",
            f"speed:      {speed}",
        ]


def probe(model: ManagedModel) -> Probe:
    """Read the window (from the server when it says) and time one short call."""
    result = Probe(model.spec, reachable=False)
    try:
        asks_server = getattr(model.client, "server_context_window", None)
        told = asks_server() if asks_server else None
        result.window = model.context_window
        result.window_from = "the server" if told else "the catalog"
        result.max_output = model.max_output_tokens("propose")
        request = Request(
            role="review",
            messages=[Message("user", PROBE_PROMPT)],
            max_output_tokens=PROBE_OUTPUT_TOKENS,
        )
        started = time.monotonic()
        reply = model.complete(request)
        result.latency_s = time.monotonic() - started
    except ModelError as exc:
        result.error = exc.message
        return result
    result.reachable = True
    result.output_tokens = reply.usage.output_tokens
    result.truncated = reply.truncated
    return result
