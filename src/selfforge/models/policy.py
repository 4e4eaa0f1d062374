"""The one policy for model failures, used wherever the engine calls a model.

- transient (rate limits, server errors, time-outs): retried by the provider within a
  bounded time (``managed.py``); one that outlasts its retries ends the attempt as an
  error, and three in a row end the run;
- a malformed reply: a repair round (the attempt asks again, naming the problem);
- a model that cannot be used at all — unknown (404, ``model_not_found``), a key refused
  (401/403), a server that cannot be reached, a long-window quota already used up at the
  run's first call — the run stops at once with exit 1 and one line naming the provider,
  the model, the cause and the fix that fits a hosted API or a local server;
- a long-window quota that runs out after the model has answered: the run stops cleanly
  (exit 0: it did its work up to the limit), naming the limit and its reset.
"""

from __future__ import annotations

from selfforge.errors import SelfforgeError
from selfforge.models.base import (
    AuthError,
    ModelError,
    ModelNotFound,
    ModelUnreachable,
    QuotaExhausted,
)
from selfforge.models.spec import ModelSpec, parse_spec

UNREACHABLE_MARKS = (
    "connection failed",
    "connection refused",
    "name or service not known",
    "cannot reach",
    "unreachable",
    "nodename nor servname",
)
LOCAL_SERVERS = "`ollama serve`, `llama-server -m FILE`, `vllm serve MODEL` or LM Studio"


class ModelFailure(SelfforgeError):
    """The configured model cannot be used at all; the run stops (exit 1)."""

    @classmethod
    def from_error(cls, exc: ModelError, spec: str) -> ModelFailure:
        parsed = _parse(spec)
        where = "a local server" if parsed.is_local else "a hosted API"
        if parsed.provider == "ollama" and not parsed.base_url:
            where = "a local server"
        cause, _, own_fix = exc.message.partition("; ")
        fix = _fix(exc, parsed, where == "a local server") or own_fix or "check --model"
        return cls(f"the model {spec} ({where}) cannot be used: {cause}; {fix}")


def _parse(spec: str) -> ModelSpec:
    try:
        return parse_spec(spec)
    except SelfforgeError:
        provider, _, model = spec.partition(":")
        return ModelSpec(provider, model)


def _fix(exc: ModelError, spec: ModelSpec, local: bool) -> str | None:
    """The fix that fits this provider; None keeps the error's own (e.g. which key)."""
    listing = f"`selfforge models --model {spec}` lists what it offers"
    if isinstance(exc, ModelNotFound):
        if spec.provider == "ollama":
            return f"pull it (`ollama pull {spec.model}`) or fix the name; {listing}"
        if local:
            return f"load it in the server or fix the name; {listing}"
        return f"fix the model name (a typo?); {listing} to your key"
    if isinstance(exc, AuthError) and local:
        return f"the server at {spec.host} wants a key: set OPENAI_API_KEY to it"
    if isinstance(exc, ModelUnreachable) or unreachable(exc):
        if local:
            return f"start the server ({LOCAL_SERVERS}) or fix the @BASE_URL"
        return "check the network connection, a proxy (HTTPS_PROXY) and the @BASE_URL"
    if isinstance(exc, QuotaExhausted):
        resets = f" ({exc.resets})" if exc.resets else ""
        return f"wait for it to reset{resets}, raise it with the provider, or use another --model"
    return None


def unreachable(exc: ModelError) -> bool:
    if type(exc).__name__ in ("ModelUnreachable", "Unreachable"):
        return True
    text = exc.message.lower()
    return any(mark in text for mark in UNREACHABLE_MARKS)


def classify(exc: ModelError, *, answered: int = 1) -> str:
    """'stop' (clean, exit 0), 'fail' (exit 1), or 'skip' (this attempt errs; go on).

    ``answered``: how many calls of this run the model answered before this error; a quota
    that is already used up at the first call means the model cannot be used at all."""
    if isinstance(exc, QuotaExhausted):
        return "stop" if answered else "fail"
    if isinstance(exc, AuthError | ModelNotFound) or unreachable(exc):
        return "fail"
    return "skip"


def fatal(exc: ModelError) -> bool:
    return classify(exc) != "skip"
