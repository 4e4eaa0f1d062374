"""The one policy for model failures, used wherever the engine calls a model.

- transient (rate limits, server errors, time-outs): retried by the provider within a
  bounded time (``managed.py``); one that outlasts its retries ends the attempt as an
  error, and three in a row end the run;
- a malformed reply: a repair round (the attempt asks again, naming the problem);
- a long-window quota: the run stops cleanly (exit 0), naming the limit and its reset;
- a model that cannot be reached or refuses the key: the run stops at once with exit 1
  and one line naming the model, its host and the cause.
"""

from __future__ import annotations

from selfforge.errors import SelfforgeError
from selfforge.models.base import AuthError, ModelError, QuotaExhausted

UNREACHABLE_MARKS = (
    "connection failed",
    "connection refused",
    "name or service not known",
    "cannot reach",
    "unreachable",
    "nodename nor servname",
)


class ModelFailure(SelfforgeError):
    """The configured model cannot be used at all; the run stops (exit 1)."""

    @classmethod
    def from_error(cls, exc: ModelError, spec: str) -> ModelFailure:
        host = spec.split("@", 1)[1] if "@" in spec else spec.split(":", 1)[0]
        if isinstance(exc, AuthError):
            fix = "check the API key (environment or ~/.config/selfforge/keys.toml)"
        else:
            fix = "start the server or fix the model spec's @BASE_URL, then run again"
        return cls(f"the model {spec} ({host}) cannot be used: {exc.message}; {fix}")


def unreachable(exc: ModelError) -> bool:
    if type(exc).__name__ in ("ModelUnreachable", "Unreachable"):
        return True
    text = exc.message.lower()
    return any(mark in text for mark in UNREACHABLE_MARKS)


def classify(exc: ModelError) -> str:
    """'stop' (clean, exit 0), 'fail' (exit 1), or 'skip' (this attempt errs; go on)."""
    if isinstance(exc, QuotaExhausted):
        return "stop"
    if isinstance(exc, AuthError) or unreachable(exc):
        return "fail"
    return "skip"


def fatal(exc: ModelError) -> bool:
    return classify(exc) != "skip"
