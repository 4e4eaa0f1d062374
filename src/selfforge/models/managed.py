"""A provider client made fit for hours of unattended use: pacing, retries, cost.
(The budget is checked once, before every call, by ``roles.Caller``.)

Retry rules (issue: rate limits and faults): a server-given wait (Retry-After,
RetryInfo) is honoured; 5xx, timeouts, dropped connections and garbled answers back off
exponentially with jitter; a wait longer than ``max_wait_s`` is treated as a long-window
quota and stops the run; auth and request errors are never retried. tenacity runs the
loop; every wait goes through the injected ``sleep``, so tests take no real time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import tenacity

from selfforge.models.base import (
    ContextTooLong,
    ModelError,
    QuotaExhausted,
    RateLimited,
    Reply,
    Request,
    Usage,
)
from selfforge.models.catalog import ModelFacts
from selfforge.models.generation import Generation, fit_request, output_cap
from selfforge.models.http import Client, Pacer
from selfforge.models.pricing import cost_usd
from selfforge.models.quota import reset_after_seconds
from selfforge.models.spec import ModelSpec

log = logging.getLogger("selfforge.models")

# Output tokens assumed for a call's cost estimate when the request sets no cap.
TYPICAL_OUTPUT_TOKENS = 2048


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    base_s: float = 2.0
    cap_s: float = 60.0
    # A server asking for a longer wait than this is out of a long-window quota.
    max_wait_s: float = 600.0

    def backoff(self) -> tenacity.wait.wait_base:
        """Exponential with jitter, so many clients do not retry in lockstep: before retry
        n (from 0), half of min(cap, base * 2**n) plus a random part of the other half."""
        half = {"multiplier": self.base_s / 2, "max": self.cap_s / 2}
        return tenacity.wait_exponential(**half) + tenacity.wait_random_exponential(**half)


class ManagedModel:
    """Fits the Model protocol; wraps one provider client."""

    def __init__(
        self,
        client: Client,
        spec: ModelSpec,
        facts: ModelFacts,
        *,
        pacer: Pacer,
        policy: RetryPolicy,
        on_wait: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        generation: Generation | None = None,
    ) -> None:
        self.client = client
        self.parsed = spec
        self.spec = str(spec)
        self.facts = facts
        self.pacer = pacer
        self.policy = policy
        self.on_wait = on_wait
        self._sleep = sleep
        self._backoff = policy.backoff()
        self.generation = generation or Generation()
        self._window: int | None = None
        # Raised each time the server refuses a prompt for its size that the estimate said
        # would fit, so the same request is never sent again unchanged.
        self._estimate_scale = 1.0

    def complete(self, request: Request) -> Reply:
        request = self.prepare(request)
        reply = self._with_retries(request)
        reply.cost_usd = cost_usd(self.parsed, reply.usage, self.facts)
        return reply

    def estimate_cost(self, request: Request, input_tokens: int) -> float | None:
        """USD this request would cost, assuming a typical reply when it sets no cap."""
        output = request.max_output_tokens or TYPICAL_OUTPUT_TOKENS
        usage = Usage(input_tokens=input_tokens, output_tokens=output)
        return cost_usd(self.parsed, usage, self.facts)

    @property
    def context_window(self) -> int:
        """The window in force: what a local server says it runs the model with (for
        Ollama the num_ctx sent), else the catalog's. Asked once; raises
        ModelUnreachable when the server does not answer."""
        if self._window is None:
            ask = getattr(self.client, "server_context_window", None)
            try:
                self._window = (ask() if ask else None) or self.facts.context_window
            except ModelError as exc:
                if not exc.retryable:
                    raise
                return self.facts.context_window  # a busy server: ask again next call
        return self._window

    def max_output_tokens(self, role: str) -> int:
        """The output cap a role's calls carry (see generation.output_cap)."""
        return output_cap(self.generation, role, self.facts.max_output_tokens, self.context_window)

    def temperature(self, role: str) -> float | None:
        configured = self.generation.user_temperature(role)
        return self.facts.temperature if configured is None else configured

    def prepare(self, request: Request) -> Request:
        """The request with this model's generation settings, fitted to its window."""
        if request.max_output_tokens is None:
            request.max_output_tokens = self.max_output_tokens(request.role)
        if request.temperature is None:
            request.temperature = self.temperature(request.role)
        return fit_request(request, self.context_window, self.spec, self._estimate_scale)

    def list_models(self) -> list[str]:
        return self.client.list_models()

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def __repr__(self) -> str:
        return f"ManagedModel({self.spec!r})"

    def _with_retries(self, request: Request) -> Reply:
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_retryable),
            stop=tenacity.stop_after_attempt(self.policy.max_retries + 1),
            wait=self._delay,
            before_sleep=self._before_retry,
            retry_error_callback=_give_up,
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(self._send_once, request)

    def _send_once(self, request: Request) -> Reply:
        self.pacer.wait()
        try:
            return self.client.send(request)
        except ContextTooLong:
            self._estimate_scale *= 1.25
            raise

    def _delay(self, state: tenacity.RetryCallState) -> float:
        # A zero hint is no hint: retrying at once would only burn the retries.
        return _error(state).retry_after_s or self._backoff(state)

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        exc, delay = _error(state), state.upcoming_sleep
        hinted = exc.retry_after_s
        if hinted is not None and hinted > self.policy.max_wait_s:
            resets = reset_after_seconds(hinted)
            raise QuotaExhausted(
                f"{exc.message}; the server asks to wait until {resets}, longer than "
                f"{self.policy.max_wait_s:g}s, so the run stops here: resume it then",
                resets=resets,
                limit=exc.kind,
            )
        note = f"{exc.message}; retrying in {delay:.1f}s"
        # info, not warning: on_wait shows it; Python's last-resort handler would repeat it.
        log.info(note)
        if self.on_wait is not None:
            self.on_wait(note)
        if isinstance(exc, RateLimited):
            # Everyone sharing this model's pacer holds off too, not just this call (this
            # call sleeps the delay itself, so its own pacer.wait() finds it over).
            self.pacer.defer(delay)
            self.pacer.slow_down()


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.retryable


def _error(state: tenacity.RetryCallState) -> ModelError:
    assert state.outcome is not None  # tenacity asks for a wait only after a failed try
    exc = state.outcome.exception()
    assert isinstance(exc, ModelError)  # only ModelErrors are retryable
    return exc


def _give_up(state: tenacity.RetryCallState) -> NoReturn:
    exc = _error(state)
    raise type(exc)(f"{exc.message} (gave up after {state.attempt_number} tries)") from None
