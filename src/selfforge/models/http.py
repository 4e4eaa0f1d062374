"""The HTTP layer every network provider shares: one call, status -> error, pacing.

Providers turn a ``Request`` into one HTTP call and a ``Reply`` (or a ``ModelError``);
retrying and pacing live in ``managed.py`` so each provider stays a thin translator.
"""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import tenacity
from pydantic import SecretStr

from selfforge.models.base import (
    AuthError,
    BadRequest,
    ContextTooLong,
    MalformedResponse,
    ModelError,
    ModelNotFound,
    ModelTimeout,
    ModelUnreachable,
    RateLimited,
    Reply,
    Request,
    ServerError,
)
from selfforge.models.catalog import ModelFacts
from selfforge.models.durations import parse_duration
from selfforge.models.secrets import mask
from selfforge.models.spec import ModelSpec

DETAIL_LIMIT = 300
# A refused connection is retried this many times, quickly, before the model counts as
# unreachable: long enough to ride out a server restart, short enough to stop a run fast.
CONNECT_TRIES = 3
CONNECT_TIMEOUT_S = 5.0
# How servers say the prompt does not fit: llama.cpp, OpenAI, vLLM, LM Studio, Anthropic,
# Gemini, in that order.
_CONTEXT_SIZE = re.compile(
    r"exceed_context_size|context_length_exceeded|maximum context length|"
    r"exceeds? the (?:available )?context|context (?:size|length|window) (?:of|is|exceeded)|"
    r"prompt is too long|input token count.{0,40}exceeds",
    re.IGNORECASE,
)


class Client(Protocol):
    """One provider's wire protocol: one attempt per call, no retries."""

    label: str

    def send(self, request: Request) -> Reply: ...

    def list_models(self) -> list[str]: ...


@dataclass
class Transport:
    """An httpx client with a timeout; connection faults become retryable ModelErrors."""

    label: str
    timeout_s: float = 120.0
    # repr=False: the headers carry the key, and reprs end up in tracebacks and logs.
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    _client: httpx.Client | None = field(default=None, repr=False)

    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    connect_backoff_s: float = 0.5

    @classmethod
    def of(cls, endpoint: Endpoint, label: str, headers: dict[str, str]) -> Transport:
        """The transport a client of ``endpoint`` uses: its timeout, waits and headers."""
        return cls(
            label,
            endpoint.timeout_s,
            headers,
            sleep=endpoint.sleep,
            connect_backoff_s=endpoint.connect_backoff_s,
        )

    def request(self, method: str, url: str, body: Any = None) -> httpx.Response:
        connect = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type((httpx.ConnectError, httpx.ConnectTimeout)),
            stop=tenacity.stop_after_attempt(CONNECT_TRIES),
            wait=tenacity.wait_exponential(multiplier=self.connect_backoff_s),  # 0.5 s, 1 s
            sleep=self.sleep,
            reraise=True,
        )
        try:
            return connect(self._http().request, method, url, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise unreachable(self.label, url, exc) from None
        except httpx.TimeoutException:
            raise ModelTimeout(f"{self.label}: no answer within {self.timeout_s:g}s") from None
        except httpx.TransportError as exc:
            # str(exc) names the host and errno; the URL carries no key (keys go in headers).
            raise ServerError(f"{self.label}: connection failed ({mask(str(exc))})") from None

    def call_json(
        self, method: str, url: str, body: Any, on_error: Callable[[httpx.Response], ModelError]
    ) -> dict[str, Any]:
        """Request; a non-200 answer raises ``on_error(response)``; else the JSON object."""
        response = self.request(method, url, body)
        if response.status_code != 200:
            raise on_error(response)
        return json_body(response, self.label)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            timeout = httpx.Timeout(self.timeout_s, connect=min(CONNECT_TIMEOUT_S, self.timeout_s))
            self._client = httpx.Client(timeout=timeout, headers=self.headers)
        return self._client


def unreachable(label: str, url: str, exc: Exception) -> ModelUnreachable:
    """The error for a server that does not answer at all, naming the host and cause."""
    parsed = httpx.URL(url)
    host = f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host
    text = str(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        cause = f"no connection within {CONNECT_TIMEOUT_S:g}s"
    elif "refused" in text.lower():
        cause = "connection refused"
    elif any(m in text.lower() for m in ("name or service", "nodename nor", "name resolution")):
        cause = "no such host"
    else:
        cause = mask(text) or type(exc).__name__
    if ModelSpec("", "", url).is_local:
        fix = (
            "start the model server there, or point --model at the right address "
            "(PROVIDER:MODEL@http://HOST:PORT/v1)"
        )
    else:  # a hosted API: nothing for the user to start
        fix = "check the network connection, a proxy (HTTPS_PROXY) and the @BASE_URL"
    return ModelUnreachable(f"{label}: cannot reach {host} ({cause}); {fix}")


def json_body(response: httpx.Response, label: str) -> dict[str, Any]:
    """The response's JSON object, or a MalformedResponse saying what came instead."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise MalformedResponse(
            f"{label}: the answer is not JSON: {snippet(response.text)}"
        ) from None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # some Google front ends wrap the object in a list
    if not isinstance(data, dict):
        raise MalformedResponse(f"{label}: expected a JSON object, got {snippet(response.text)}")
    return data


def snippet(text: str) -> str:
    text = mask(" ".join(text.split()))
    return text if len(text) <= DETAIL_LIMIT else text[:DETAIL_LIMIT] + "…"


@dataclass(frozen=True)
class KeyInfo:
    """Which key a client sent, for error messages (never the value)."""

    names: tuple[str, ...]
    sent: str | None  # the variable the key came from, or None if no key was sent
    help_url: str


def status_error(
    label: str,
    status: int,
    detail: str,
    key: KeyInfo,
    retry_after_s: float | None = None,
    code: str = "",
) -> ModelError:
    """The ModelError for a non-2xx status, with a message that says what to do."""
    if status in (400, 413, 422) and _CONTEXT_SIZE.search(f"{code} {detail}"):
        return context_too_long(label, detail)
    detail = snippet(detail)
    if status in (401, 403):
        return auth_error(label, status, detail, key)
    if status == 429:
        return RateLimited(f"{label}: rate limited (429): {detail}", retry_after_s)
    if status == 408:
        return ModelTimeout(f"{label}: the server timed out (408): {detail}")
    if status >= 500:
        return ServerError(f"{label}: server error {status}: {detail}", retry_after_s)
    if status == 404 or _MODEL_MISSING.search(f"{code} {detail}"):
        return ModelNotFound(
            f"{label}: the model was not found ({status}): {detail}; check the model name "
            "(`selfforge models --model SPEC` lists what the server offers) and the @BASE_URL"
        )
    return BadRequest(f"{label}: the request was rejected ({status}): {detail}")


# How servers say "no such model" without a 404 (OpenAI's code, vLLM's and Ollama's text).
_MODEL_MISSING = re.compile(
    r"model_not_found|model ['\"`]?[\w.:/-]+['\"`]? (not found|does not exist)", re.I
)


def context_too_long(label: str, detail: str) -> ContextTooLong:
    return ContextTooLong(
        f"{label}: the prompt does not fit the model's context window ({snippet(detail)}); "
        "raise the server's context (llama.cpp -c 8192, vLLM --max-model-len 8192, Ollama "
        "num_ctx, LM Studio's context length) or lower max_output_tokens in [model]"
    )


def auth_error(label: str, status: int, detail: str, key: KeyInfo) -> AuthError:
    if key.sent is None:
        wanted = " or ".join(key.names) or "a key"
        return AuthError(f"{label}: no key was sent ({status}); set {wanted} (see {key.help_url})")
    return AuthError(
        f"{label}: {key.sent} was rejected ({status}): {detail}; check the key at {key.help_url}"
    )


def parse_delay(value: str | None) -> float | None:
    """Seconds from a Retry-After header, a protobuf Duration ("43.5s") or "6m0s"."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    seconds = parse_duration(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_after(response: httpx.Response) -> float | None:
    """The server's requested wait: ``retry-after-ms`` (OpenAI, Anthropic) or ``Retry-After``."""
    millis = response.headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return parse_delay(response.headers.get("retry-after"))


class Pacer:
    """Spaces calls at least 60/rpm seconds apart, and past any server-given wait.

    Shared by every model object with the same spec (see ``pacer_for``), since a run
    may call one model from several roles and the provider counts them together.
    """

    def __init__(
        self,
        requests_per_minute: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._clock, self._sleep = clock, sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Block until the next call may go; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        waited = start - now
        if waited > 0:
            self._sleep(waited)
        return waited

    def slow_down(self) -> None:
        """After a 429, space paced calls 1.5 times wider (up to one a minute): the
        configured rate was too fast for this key. Unpaced models stay unpaced."""
        with self._lock:
            self.interval = min(self.interval * 1.5, max(self.interval, 60.0))

    def defer(self, seconds: float) -> None:
        """No call before ``seconds`` from now (a server asked us to wait)."""
        with self._lock:
            self._next = max(self._next, self._clock() + seconds)


_pacers: dict[tuple[str, float | None], Pacer] = {}
_pacers_lock = threading.Lock()


def pacer_for(key: str, requests_per_minute: float | None) -> Pacer:
    with _pacers_lock:
        pacer = _pacers.get((key, requests_per_minute))
        if pacer is None:
            pacer = _pacers[(key, requests_per_minute)] = Pacer(requests_per_minute)
        return pacer


@dataclass(frozen=True)
class Endpoint:
    """Everything a provider client needs to talk to one model."""

    spec: ModelSpec
    base_url: str
    key: SecretStr | None
    key_info: KeyInfo
    facts: ModelFacts
    timeout_s: float = 120.0
    # Every wait between tries goes through this (tests inject one that takes no time).
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    connect_backoff_s: float = 0.5  # the catalog's [retry] connect_backoff_s

    @property
    def label(self) -> str:
        return f"{self.spec.provider}:{self.spec.model}"
