"""The Model protocol and the records every provider returns.

A model is anything with ``complete(request) -> Reply``. Every call the engine makes is
labelled with a role (DESIGN.md §2) so the scripted model can answer per role and the
journal can account per role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from selfforge.errors import SelfforgeError

Role = Literal["plan", "propose", "critique", "review", "reflect", "diagnose"]
ROLES: tuple[str, ...] = ("plan", "propose", "critique", "review", "reflect", "diagnose")


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0  # includes thinking tokens
    cached_tokens: int = 0
    thinking_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Request:
    """One model call. ``hints`` carry facts (goal, instruction) that only the scripted
    model reads, to build its neutral defaults; real providers ignore them."""

    role: str
    messages: list[Message]
    hints: dict[str, Any] = field(default_factory=dict)
    max_output_tokens: int | None = None
    temperature: float | None = None


@dataclass
class Reply:
    content: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cost_usd: float | None = None
    # The server stopped at the output limit (finish_reason "length", MAX_TOKENS, ...):
    # the content is a prefix of what the model meant to say.
    truncated: bool = False


@runtime_checkable
class Model(Protocol):
    """What the engine needs from a model."""

    spec: str

    def complete(self, request: Request) -> Reply: ...


# --- provider errors -------------------------------------------------------------------


class ModelError(SelfforgeError):
    """A model call failed. ``kind`` is one of the scripted model's error names."""

    kind = "error"
    retryable = False
    # Seconds the server asked us to wait before trying again, when it said so.
    retry_after_s: float | None = None


class RateLimited(ModelError):
    kind = "rate_limit"
    retryable = True

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class QuotaExhausted(ModelError):
    """A per-day (or other long-window) quota is used up: stop the run, do not retry."""

    kind = "quota"

    def __init__(self, message: str, resets: str | None = None, limit: str | None = None) -> None:
        super().__init__(message)
        self.resets = resets  # when the quota resets, readable ("2026-11-23 08:00 UTC")
        self.limit = limit  # which quota ran out, e.g. a Gemini quotaId


class ServerError(ModelError):
    kind = "server"
    retryable = True

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ModelTimeout(ModelError):
    kind = "timeout"
    retryable = True


class AuthError(ModelError):
    kind = "auth"


class BadRequest(ModelError):
    kind = "bad_request"


class ModelNotFound(BadRequest):
    """The server does not know the model (404, ``model_not_found``): a typo or a model
    that is not pulled or loaded. Never retried; the run stops."""

    kind = "not_found"


class ContextTooLong(BadRequest):
    """The prompt and the output cap do not fit the model's window: never resent as is."""

    kind = "context_size"


class ModelUnreachable(ModelError):
    """No server answers at the model's address (refused, no such host): the run stops.

    Raised after a few seconds of quick retries, never after the long backoff that a
    busy server gets: nothing will change by waiting for a server that is not running.
    """

    kind = "unreachable"


class ReplyTruncated(ModelError):
    """A reply cut at the output limit where a partial answer must not be used."""

    kind = "truncated"


class MalformedResponse(ModelError):
    kind = "malformed"
    retryable = True


ERROR_KINDS: dict[str, type[ModelError]] = {
    "rate_limit": RateLimited,
    "server": ServerError,
    "timeout": ModelTimeout,
    "auth": AuthError,
    "quota": QuotaExhausted,
    "bad_request": BadRequest,
    "not_found": ModelNotFound,
    "malformed": MalformedResponse,
    "context_size": ContextTooLong,
    "unreachable": ModelUnreachable,
    "truncated": ReplyTruncated,
}
