"""Google Gemini's native ``generateContent`` API over httpx.

Gemini reports thinking separately (``thoughtsTokenCount``) and explains a 429 in
``error.details``: ``RetryInfo.retryDelay`` says how long to wait, and a ``QuotaFailure``
whose ``quotaId`` contains ``PerDay`` means waiting minutes will not help.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from selfforge.models.base import (
    BadRequest,
    MalformedResponse,
    ModelError,
    QuotaExhausted,
    Reply,
    Request,
    Usage,
)
from selfforge.models.http import (
    Endpoint,
    Transport,
    auth_error,
    json_body,
    parse_delay,
    retry_after,
    snippet,
    status_error,
)
from selfforge.models.quota import describe_reset, pacific_midnight_after
from selfforge.models.turns import split_system

_BLOCKED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"}


class GeminiClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.model = endpoint.spec.model.removeprefix("models/")
        self.label = f"Gemini {self.model}"
        headers = {"x-goog-api-key": endpoint.key.get_secret_value()} if endpoint.key else {}
        self.transport = Transport.of(endpoint, self.label, headers)
        base = endpoint.base_url.rstrip("/")
        self.api = base if base.endswith(("/v1beta", "/v1")) else base + "/v1beta"

    def send(self, request: Request) -> Reply:
        started = time.monotonic()
        url = f"{self.api}/models/{self.model}:generateContent"
        data = self.transport.call_json("POST", url, request_body(request), self.error)
        candidates = data.get("candidates") or [{}]
        return Reply(
            content=reply_text(data, self.label),
            usage=usage_from(data.get("usageMetadata") or {}),
            model=str(self.endpoint.spec),
            latency_s=time.monotonic() - started,
            truncated=candidates[0].get("finishReason") == "MAX_TOKENS",
        )

    def list_models(self) -> list[str]:
        data = self.transport.call_json("GET", f"{self.api}/models?pageSize=1000", None, self.error)
        models = data.get("models") or []
        return [
            str(m.get("name", "")).removeprefix("models/")
            for m in models
            if "generateContent" in (m.get("supportedGenerationMethods") or ["generateContent"])
        ]

    def close(self) -> None:
        self.transport.close()

    def error(self, response: httpx.Response) -> ModelError:
        try:
            err = json_body(response, self.label).get("error") or {}
        except MalformedResponse:
            err = {}
        if not isinstance(err, dict):
            err = {"message": str(err)}
        message = str(err.get("message") or response.text)
        details = error_details(err)
        reasons = {d.get("reason") for d in details if _is(d, "ErrorInfo")}
        status = response.status_code
        # An invalid key is a 400 INVALID_ARGUMENT with reason API_KEY_INVALID.
        if "API_KEY_INVALID" in reasons or (status == 400 and "API key not valid" in message):
            return auth_error(self.label, status, snippet(message), self.endpoint.key_info)
        delay = retry_delay(details) or retry_after(response)
        if status == 429:
            quota = gemini_quota_error(self.label, details)
            if quota is not None:
                return quota
            # The message is a paragraph; the quota id says the same in a few words.
            message = _short_quota(details) or message
        return status_error(self.label, status, message, self.endpoint.key_info, delay)


def gemini_quota_error(label: str, details: list[dict[str, Any]]) -> QuotaExhausted | None:
    """QuotaExhausted when a 429's QuotaFailure names a per-day (or zero) quota."""
    violations = [v for d in details if _is(d, "QuotaFailure") for v in d.get("violations") or []]
    zero = [v for v in violations if str(v.get("quotaValue", "")) == "0"]
    if zero:
        quota_id = str(zero[0].get("quotaId", "the free tier"))
        return QuotaExhausted(
            f"{label} has no quota on this key ({quota_id} is 0): "
            "enable billing for the project, or use a model the free tier includes, "
            "e.g. --model gemini:gemini-2.5-flash",
            limit=quota_id,
        )
    daily = [v for v in violations if "PerDay" in str(v.get("quotaId", ""))]
    if not daily:
        return None
    quota_id = str(daily[0].get("quotaId"))
    value = daily[0].get("quotaValue")
    limit = f"{quota_id}, limit {value}" if value else quota_id
    resets = describe_reset(pacific_midnight_after())
    return QuotaExhausted(
        f"{label}: the per-day quota ({limit}) is used up; it resets at midnight "
        f"Pacific time, {resets}. Resume the run after that, or use another model "
        "with --model",
        resets=resets,
        limit=quota_id,
    )


def request_body(request: Request) -> dict[str, Any]:
    system, turns = split_system(request.messages)
    body: dict[str, Any] = {
        "contents": [
            {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
            for role, text in turns
        ]
    }
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    config: dict[str, Any] = {}
    if request.max_output_tokens:
        config["maxOutputTokens"] = request.max_output_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if config:
        body["generationConfig"] = config
    return body


def reply_text(data: dict[str, Any], label: str) -> str:
    candidates = data.get("candidates") or []
    if not candidates:
        blocked = (data.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            raise BadRequest(f"{label} refused the prompt (blockReason {blocked})")
        raise MalformedResponse(f"{label}: the answer has no candidates: {snippet(str(data))}")
    candidate = candidates[0]
    parts = (candidate.get("content") or {}).get("parts") or []
    # Parts marked "thought" are the model's thinking summary, not its answer.
    text = "".join(str(p.get("text", "")) for p in parts if not p.get("thought"))
    finish = candidate.get("finishReason")
    if not text and finish in _BLOCKED:
        raise BadRequest(f"{label} stopped without an answer (finishReason {finish})")
    if not text and finish not in ("MAX_TOKENS", "STOP"):
        raise MalformedResponse(f"{label}: the answer has no text: {snippet(str(candidate))}")
    return text


def usage_from(meta: dict[str, Any]) -> Usage:
    thoughts = int(meta.get("thoughtsTokenCount") or 0)
    return Usage(
        input_tokens=int(meta.get("promptTokenCount") or 0),
        output_tokens=int(meta.get("candidatesTokenCount") or 0) + thoughts,
        cached_tokens=int(meta.get("cachedContentTokenCount") or 0),
        thinking_tokens=thoughts,
    )


def _short_quota(details: list[dict[str, Any]]) -> str | None:
    violations = [v for d in details if _is(d, "QuotaFailure") for v in d.get("violations") or []]
    if not violations:
        return None
    v = violations[0]
    limit = f", limit {v['quotaValue']}" if v.get("quotaValue") else ""
    return f"{v.get('quotaId', 'a quota')}{limit}"


def error_details(err: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in err.get("details") or [] if isinstance(d, dict)]


def _is(detail: dict[str, Any], kind: str) -> bool:
    return str(detail.get("@type", "")).endswith("google.rpc." + kind)


def retry_delay(details: list[dict[str, Any]]) -> float | None:
    for d in details:
        if _is(d, "RetryInfo"):
            return parse_delay(str(d.get("retryDelay", "")))
    return None
