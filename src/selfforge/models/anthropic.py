"""Anthropic's Messages API over httpx.

Anthropic counts cache reads apart from ``input_tokens``, so input here is the sum; a
429 carries ``retry-after``; 529 ``overloaded_error`` is a busy server (retry); a spend
cap or an empty credit balance is a quota (stop), not a rate limit.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from selfforge.models.base import (
    MalformedResponse,
    ModelError,
    QuotaExhausted,
    Reply,
    Request,
    Usage,
)
from selfforge.models.http import Endpoint, Transport, json_body, retry_after, snippet, status_error
from selfforge.models.quota import describe_reset, first_of_next_month_utc
from selfforge.models.turns import split_system

API_VERSION = "2023-06-01"


class AnthropicClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.label = f"Anthropic {endpoint.spec.model}"
        headers = {"anthropic-version": API_VERSION}
        if endpoint.key:
            headers["x-api-key"] = endpoint.key.get_secret_value()
        self.transport = Transport.of(endpoint, self.label, headers)
        base = endpoint.base_url.rstrip("/")
        self.api = base if base.endswith("/v1") else base + "/v1"

    def send(self, request: Request) -> Reply:
        started = time.monotonic()
        data = self.transport.call_json(
            "POST", f"{self.api}/messages", self._body(request), self.error
        )
        return Reply(
            content=reply_text(data, self.label),
            usage=usage_from(data.get("usage") or {}),
            model=str(self.endpoint.spec),
            latency_s=time.monotonic() - started,
            truncated=data.get("stop_reason") == "max_tokens",
        )

    def list_models(self) -> list[str]:
        data = self.transport.call_json("GET", f"{self.api}/models?limit=1000", None, self.error)
        return [str(m.get("id")) for m in data.get("data") or []]

    def close(self) -> None:
        self.transport.close()

    def _body(self, request: Request) -> dict[str, Any]:
        system, turns = split_system(request.messages)
        body: dict[str, Any] = {
            "model": self.endpoint.spec.model,
            # Required by this API; the catalog's cap is the model's usual maximum.
            "max_tokens": request.max_output_tokens or self.endpoint.facts.max_output_tokens,
            "messages": [{"role": role, "content": text} for role, text in turns],
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def error(self, response: httpx.Response) -> ModelError:
        try:
            err = json_body(response, self.label).get("error") or {}
        except MalformedResponse:
            err = {}
        err = err if isinstance(err, dict) else {"message": str(err)}
        message = str(err.get("message") or response.text)
        code = str((err.get("details") or {}).get("error_code", ""))
        if code == "enforced_spend_limit_reached" or "credit balance is too low" in message:
            return self._quota(code or "credit_balance", message)
        delay = retry_after(response)
        return status_error(
            self.label, response.status_code, message, self.endpoint.key_info, delay
        )

    def _quota(self, limit: str, message: str) -> QuotaExhausted:
        if limit == "enforced_spend_limit_reached":
            resets = describe_reset(first_of_next_month_utc())
            when = f"it resets {resets}, or raise the tier's limit"
        else:
            resets, when = None, "add credit in the Anthropic console (Plans & Billing)"
        return QuotaExhausted(
            f"{self.label}: the account cannot spend more, its spending quota is used up "
            f"({snippet(message)}); {when}",
            resets=resets,
            limit=limit,
        )


def reply_text(data: dict[str, Any], label: str) -> str:
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise MalformedResponse(f"{label}: the answer has no content: {snippet(str(data))}")
    # Thinking blocks are the model's reasoning; only text blocks are its answer.
    return "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def usage_from(raw: dict[str, Any]) -> Usage:
    cache_read = int(raw.get("cache_read_input_tokens") or 0)
    cache_write = int(raw.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0) + cache_read + cache_write,
        output_tokens=int(raw.get("output_tokens") or 0),
        cached_tokens=cache_read,
    )
