"""Response bodies shaped as each provider documents them (success, errors, quotas).

Used by provider_fakes.py; kept apart so the shapes can be read and checked against the
providers' documentation in one place.
"""

from __future__ import annotations

import json
from typing import Any

from werkzeug import Response


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body), status=status, headers=headers, content_type="application/json"
    )


# --- Gemini generateContent -----------------------------------------------------------


def gemini_success(text: str, model: str, usage: dict[str, int]) -> Response:
    meta: dict[str, Any] = {
        "promptTokenCount": usage["input_tokens"],
        "candidatesTokenCount": usage["output_tokens"] - usage["thinking_tokens"],
        "totalTokenCount": usage["input_tokens"] + usage["output_tokens"],
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage["input_tokens"]}],
    }
    if usage["thinking_tokens"]:
        meta["thoughtsTokenCount"] = usage["thinking_tokens"]
    if usage["cached_tokens"]:
        meta["cachedContentTokenCount"] = usage["cached_tokens"]
    return _json(
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": text}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": meta,
            "modelVersion": model,
            "responseId": "fake-response-id",
        }
    )


def gemini_error(
    code: int, status: str, message: str, details: list[Any] | None = None
) -> Response:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return _json({"error": error}, code)


def gemini_quota(model: str, quota_id: str, value: str, retry_delay: str) -> Response:
    metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
    message = (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
        f"rate-limits.\n* Quota exceeded for metric: {metric}, limit: {value}, model: {model}"
        f"\nPlease retry in {retry_delay}."
    )
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": metric,
                    "quotaId": quota_id,
                    "quotaDimensions": {"location": "global", "model": model},
                    "quotaValue": value,
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {
                    "description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                }
            ],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
    ]
    return gemini_error(429, "RESOURCE_EXHAUSTED", message, details)


def gemini_bad_key() -> Response:
    # Gemini answers an invalid key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": "API key not valid. Please pass a valid API key.",
        },
    ]
    return gemini_error(
        400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", details
    )


# --- OpenAI chat completions ----------------------------------------------------------


def openai_success(text: str, model: str, usage: dict[str, int]) -> Response:
    return _json(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1741569952,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "refusal": None,
                        "annotations": [],
                    },
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage["output_tokens"],
                "total_tokens": usage["input_tokens"] + usage["output_tokens"],
                "prompt_tokens_details": {
                    "cached_tokens": usage["cached_tokens"],
                    "audio_tokens": 0,
                },
                "completion_tokens_details": {
                    "reasoning_tokens": usage["thinking_tokens"],
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }
    )


def openai_error(
    status: int, message: str, type_: str, code: str | None, headers: dict[str, str] | None = None
) -> Response:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return _json(body, status, headers)


def openai_rate_limit(model: str, per: str, limit: int, wait: str) -> Response:
    """A 429; the wait is in the message, and (per minute) in a Retry-After header too."""
    unit = {"min": "requests per min (RPM)", "day": "requests per day (RPD)"}[per]
    message = (
        f"Rate limit reached for {model} in organization org-fake on {unit}: Limit {limit}, "
        f"Used {limit}, Requested 1. Please try again in {wait}. Visit "
        "https://platform.openai.com/account/rate-limits to learn more."
    )
    headers = {"retry-after": wait.removesuffix("s")} if per == "min" else None
    return openai_error(429, message, "requests", "rate_limit_exceeded", headers)


# --- Anthropic Messages ---------------------------------------------------------------


def anthropic_success(text: str, model: str, usage: dict[str, int]) -> Response:
    cached = usage["cached_tokens"]
    return _json(
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                # Anthropic's input_tokens excludes tokens read from or written to the cache.
                "input_tokens": usage["input_tokens"] - cached,
                "output_tokens": usage["output_tokens"],
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": cached,
                "service_tier": "standard",
            },
        }
    )


def anthropic_error(
    status: int, type_: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    body = {"type": "error", "error": {"type": type_, "message": message}, "request_id": "req_fake"}
    return _json(body, status, headers)


# --- Ollama /api/chat -----------------------------------------------------------------


def ollama_success(text: str, model: str, usage: dict[str, int]) -> Response:
    return _json(
        {
            "model": model,
            "created_at": "2025-05-01T10:00:00.000000Z",
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": "stop",
            "total_duration": 5191566416,
            "load_duration": 2154458,
            "prompt_eval_count": usage["input_tokens"],
            "prompt_eval_duration": 383809000,
            "eval_count": usage["output_tokens"],
            "eval_duration": 4799921000,
        }
    )


def ollama_error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


def ollama_show(model: str, context_length: int) -> Response:
    return _json(
        {
            "modelfile": f"FROM {model}",
            "parameters": 'stop "<|im_end|>"',
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
            "model_info": {
                "general.architecture": "qwen2",
                "general.parameter_count": 7615616512,
                "qwen2.context_length": context_length,
            },
            "capabilities": ["completion", "tools"],
        }
    )


def success(wire: str, text: str, model: str, usage: dict[str, int]) -> Response:
    builder = {
        "gemini": gemini_success,
        "openai": openai_success,
        "anthropic": anthropic_success,
        "ollama": ollama_success,
    }[wire]
    return builder(text, model, usage)


def model_list(wire: str, name: str) -> Response:
    return {
        "gemini": lambda: _json(
            {
                "models": [
                    {
                        "name": f"models/{name}",
                        "supportedGenerationMethods": ["generateContent", "countTokens"],
                        "inputTokenLimit": 1048576,
                    },
                    {
                        "name": "models/text-embedding-004",
                        "supportedGenerationMethods": ["embedContent"],
                    },
                ]
            }
        ),
        "openai": lambda: _json(
            {
                "object": "list",
                "data": [{"id": name, "object": "model", "created": 1, "owned_by": "system"}],
            }
        ),
        "anthropic": lambda: _json(
            {
                "data": [
                    {
                        "type": "model",
                        "id": name,
                        "display_name": name,
                        "created_at": "2025-09-29T00:00:00Z",
                    }
                ],
                "has_more": False,
                "first_id": name,
                "last_id": name,
            }
        ),
        "ollama": lambda: _json(
            {
                "models": [
                    {
                        "name": name,
                        "model": name,
                        "size": 4683087332,
                        "details": {"family": "qwen2"},
                    }
                ]
            }
        ),
    }[wire]()


def rate_limit(wire: str, model: str, retry_s: float) -> Response:
    """A short-window 429 with the provider's retry hint."""
    if wire == "gemini":
        return gemini_quota(
            model,
            "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            "10",
            f"{retry_s}s",
        )
    if wire == "openai":
        return openai_rate_limit(model, "min", 3, f"{retry_s}s")
    if wire == "anthropic":
        message = (
            "This request would exceed the rate limit for your organization "
            "of 50 requests per minute."
        )
        return anthropic_error(429, "rate_limit_error", message, {"retry-after": str(retry_s)})
    return ollama_error(503, "server busy, please try again.  maximum pending requests exceeded")


def daily_quota(wire: str, model: str) -> Response:
    """A long-window quota: waiting minutes will not help."""
    if wire == "gemini":
        return gemini_quota(
            model, "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "250", "41s"
        )
    if wire == "openai":
        return openai_rate_limit(model, "day", 200, "7m12s")
    if wire == "anthropic":
        return anthropic_error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to "
            "Plans & Billing to upgrade or purchase credits.",
        )
    raise ValueError("Ollama has no quotas")


def auth_failure(wire: str) -> Response:
    if wire == "gemini":
        return gemini_bad_key()
    if wire == "openai":
        return openai_error(
            401,
            "Incorrect API key provided: sf-tes***cdef. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            "invalid_api_key",
        )
    if wire == "anthropic":
        return anthropic_error(401, "authentication_error", "invalid x-api-key")
    return ollama_error(401, "unauthorized")


def server_error(wire: str, status: int) -> Response:
    if wire == "gemini":
        return gemini_error(
            status,
            "INTERNAL",
            "An internal error has occurred. Please retry or report in "
            "https://developers.generativeai.google/guide/troubleshooting",
        )
    if wire == "openai":
        return openai_error(
            status,
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )
    if wire == "anthropic":
        kind = "overloaded_error" if status == 529 else "api_error"
        return anthropic_error(
            status, kind, "Overloaded" if status == 529 else "Internal server error"
        )
    return ollama_error(status, "llama runner process has terminated: signal: killed")
