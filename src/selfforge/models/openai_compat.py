"""OpenAI-compatible chat completions over httpx: OpenAI, OpenRouter, Groq, llama.cpp's
server, vLLM, LM Studio, and Gemini's OpenAI-compatible endpoint.

Servers differ in small ways, so parsing is lenient where it is safe to be: usage may be
missing (estimated instead), errors come as ``{"error": {...}}``, ``{"error": "..."}``
or ``{"detail": ...}``, and Gemini's endpoint wraps its native error in a list.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from selfforge.models.base import (
    MalformedResponse,
    ModelError,
    ModelUnreachable,
    QuotaExhausted,
    Reply,
    Request,
    Usage,
)
from selfforge.models.catalog import load_catalog
from selfforge.models.gemini import error_details, gemini_quota_error, retry_delay
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
from selfforge.models.quota import reset_after_seconds
from selfforge.models.tokens import estimate_tokens
from selfforge.models.turns import strip_thinking

# Groq says "tokens per day (TPD)", OpenRouter "free-models-per-day".
_PER_DAY = re.compile(r"per[ -]day|\bRPD\b|\bTPD\b|daily", re.IGNORECASE)
# OpenAI and Groq put the wait in the message: "Please try again in 7m12.5s."
_TRY_AGAIN = re.compile(r"try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)")


class OpenAIClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        spec = endpoint.spec
        self.label = f"{spec.provider}:{spec.model}" + (
            f" at {spec.base_url}" if spec.base_url else ""
        )
        self.base = endpoint.base_url.rstrip("/")
        headers = {"X-Title": "selfforge"}
        if endpoint.key:
            headers["Authorization"] = f"Bearer {endpoint.key.get_secret_value()}"
        self.transport = Transport.of(endpoint, self.label, headers)

    def send(self, request: Request) -> Reply:
        started = time.monotonic()
        data = self.transport.call_json(
            "POST", f"{self.base}/chat/completions", self._body(request), self.error
        )
        content = reply_text(data, self.label)
        prompt = "\n".join(m.content for m in request.messages)
        return Reply(
            content=content,
            usage=usage_from(data.get("usage"), prompt, content),
            model=str(self.endpoint.spec),
            latency_s=time.monotonic() - started,
            truncated=finish_reason(data) == "length",
        )

    def list_models(self) -> list[str]:
        data = self.transport.call_json("GET", f"{self.base}/models", None, self.error)
        return [str(m.get("id")) for m in data.get("data") or []]

    def server_context_window(self) -> int | None:
        """The window the server runs the model with, or None for hosted APIs and servers
        that do not say. Raises ModelUnreachable when nothing answers.

        llama.cpp: ``meta.n_ctx`` in /v1/models, else ``/props``; vLLM: ``max_model_len``
        in /v1/models; LM Studio: ``loaded_context_length`` in /api/v0/models.
        """
        host = (httpx.URL(self.base).host or "").lower()
        if host in load_catalog().host_keys:
            return None  # a hosted API: the catalog knows its windows
        root = self.base.removesuffix("/v1")
        for url, read in (
            (f"{self.base}/models", self._window_in_models),
            (f"{root}/props", _window_in_props),
            (f"{root}/api/v0/models", self._window_in_models),
        ):
            try:
                window = read(self.transport.call_json("GET", url, None, self.error))
            except ModelError as exc:
                if exc.retryable or isinstance(exc, ModelUnreachable):
                    raise  # the server is in trouble, not missing the endpoint
                continue  # this server does not have that endpoint
            if window:
                return window
        return None

    def _window_in_models(self, data: dict[str, Any]) -> int | None:
        entries = [m for m in data.get("data") or [] if isinstance(m, dict)]
        mine = [m for m in entries if m.get("id") == self.endpoint.spec.model]
        if not mine and len(entries) == 1:  # llama.cpp serves one model, whatever it is called
            mine = entries
        for entry in mine:
            meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
            for value in (
                meta.get("n_ctx"),
                entry.get("max_model_len"),
                entry.get("loaded_context_length"),
                entry.get("max_context_length"),
            ):
                if isinstance(value, int) and value > 0:
                    return value
        return None

    def close(self) -> None:
        self.transport.close()

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.endpoint.spec.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": False,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_output_tokens:
            # OpenAI's reasoning models reject max_tokens; most other servers ignore
            # max_completion_tokens, so each gets the name it understands.
            official = self.base.startswith("https://api.openai.com")
            body["max_completion_tokens" if official else "max_tokens"] = request.max_output_tokens
        return body

    def error(self, response: httpx.Response) -> ModelError:
        err = _error_object(response, self.label)
        message = str(err.get("message") or response.text)
        code = str(err.get("code") or err.get("type") or "")
        status = response.status_code
        key = self.endpoint.key_info
        if (
            status == 400
            and re.search(r"api[ _]key", message, re.IGNORECASE)
            and "valid" in message
        ):
            return auth_error(self.label, status, snippet(message), key)
        # Gemini's OpenAI-compatible endpoint still explains a 429 with RetryInfo.
        delay = retry_after(response) or retry_delay(error_details(err)) or _openrouter_reset(err)
        hint = _TRY_AGAIN.search(message)
        if delay is None and hint:
            delay = parse_delay(hint.group(1))
        if status == 429:
            quota = gemini_quota_error(self.label, error_details(err)) or self._quota(
                code, message, delay
            )
            if quota is not None:
                return quota
        kinds = f"{code} {err.get('type') or ''}"  # llama.cpp: code 400, type exceed_context_...
        return status_error(self.label, status, message, key, delay, kinds)

    def _quota(self, code: str, message: str, delay: float | None) -> QuotaExhausted | None:
        if code == "insufficient_quota":
            return QuotaExhausted(
                f"{self.label}: the account has no credit left (insufficient_quota): "
                f"add credit or raise the spend limit ({snippet(message)})",
                limit="insufficient_quota",
            )
        if not _PER_DAY.search(message):
            return None
        resets = reset_after_seconds(delay) if delay is not None else None
        when = f"it resets {resets}" if resets else "the server did not say when it resets"
        return QuotaExhausted(
            f"{self.label}: a per-day quota is used up ({snippet(message)}); {when}. "
            "Resume the run after that, or use another model with --model",
            resets=resets,
            limit="per-day",
        )


def finish_reason(data: dict[str, Any]) -> str:
    choices = data.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return ""
    return str(choices[0].get("finish_reason") or "")


def _window_in_props(data: dict[str, Any]) -> int | None:
    settings = data.get("default_generation_settings")
    for value in ((settings or {}).get("n_ctx"), data.get("n_ctx")):
        if isinstance(value, int) and value > 0:
            return value
    return None


def _openrouter_reset(err: dict[str, Any]) -> float | None:
    """OpenRouter puts the limit's reset (epoch milliseconds) in error.metadata.headers."""
    headers = (err.get("metadata") or {}).get("headers") or {}
    try:
        reset_ms = float(headers["X-RateLimit-Reset"])
    except (KeyError, TypeError, ValueError):
        return None
    return max(0.0, reset_ms / 1000 - time.time())


def _error_object(response: httpx.Response, label: str) -> dict[str, Any]:
    try:
        data = json_body(response, label)
    except MalformedResponse:
        return {}
    err = data.get("error", data)
    if isinstance(err, str):
        return {"message": err}
    if not isinstance(err, dict):
        return {}
    if "message" not in err and "detail" in err:  # FastAPI-style servers (older vLLM)
        return {"message": str(err["detail"])}
    return err


def reply_text(data: dict[str, Any], label: str) -> str:
    choices = data.get("choices")
    if not choices or not isinstance(choices, list):
        raise MalformedResponse(f"{label}: the answer has no choices: {snippet(str(data))}")
    message = choices[0].get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # a few servers send content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if content is None and message.get("refusal"):
        raise MalformedResponse(f"{label} refused: {snippet(str(message['refusal']))}")
    return strip_thinking(content or "")


def usage_from(raw: Any, prompt: str, content: str) -> Usage:
    if not isinstance(raw, dict) or "prompt_tokens" not in raw:
        # Some local servers omit usage; an estimate keeps budgets and totals honest.
        return Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(content))
    prompt_tokens = int(raw.get("prompt_tokens") or 0)
    completion = int(raw.get("completion_tokens") or 0)
    reasoning = int((raw.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    # OpenAI counts reasoning inside completion_tokens; Gemini's endpoint leaves its
    # thinking out of completion_tokens but inside total_tokens. Take the larger.
    total = int(raw.get("total_tokens") or 0)
    output = max(completion, total - prompt_tokens)
    if reasoning > output:  # completion_tokens cannot include reasoning larger than itself
        output = completion + reasoning
    return Usage(
        input_tokens=prompt_tokens,
        output_tokens=output,
        cached_tokens=int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0),
        thinking_tokens=max(reasoning, output - completion),
    )
