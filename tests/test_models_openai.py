"""The OpenAI-compatible client against a real local server answering like OpenAI."""

from __future__ import annotations

import json
import time

import pytest
from werkzeug import Response

from selfforge.models import Message, Request
from selfforge.models.base import AuthError, BadRequest, ModelTimeout, QuotaExhausted

from provider_fakes import TEST_KEY, fake_openai


def ask(text: str = "Fix add()") -> Request:
    return Request(
        role="propose", messages=[Message("system", "You edit code."), Message("user", text)]
    )


def test_success_records_cached_and_reasoning_tokens(httpserver) -> None:
    fake = fake_openai(httpserver, ["the edit"])
    fake.usage = {
        "input_tokens": 2000,
        "output_tokens": 500,
        "cached_tokens": 1024,
        "thinking_tokens": 200,
    }
    reply = fake.model().complete(ask())
    assert reply.content == "the edit"
    usage = reply.usage
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        usage.thinking_tokens,
    ) == (
        2000,
        500,
        1024,
        200,
    )
    assert fake.headers[0]["Authorization"] == f"Bearer {TEST_KEY}"
    assert fake.requests[0]["messages"][0] == {"role": "system", "content": "You edit code."}


def test_rate_limit_honours_retry_after(httpserver) -> None:
    fake = fake_openai(httpserver, ["ok"])
    fake.rate_limit_once(retry_s=0.1)
    assert fake.model().complete(ask()).content == "ok"
    assert len(fake.requests) == 2


def test_requests_per_day_limit_is_a_quota(httpserver) -> None:
    fake = fake_openai(httpserver)
    fake.daily_quota()
    with pytest.raises(QuotaExhausted) as caught:
        fake.model().complete(ask())
    assert (
        "per-day quota" in caught.value.message and "requests per day (RPD)" in caught.value.message
    )
    assert caught.value.resets and "in 7m" in caught.value.resets
    assert len(fake.requests) == 1


def test_insufficient_quota_is_a_quota(httpserver) -> None:
    fake = fake_openai(httpserver)
    fake.faults.append(
        lambda: Response(
            json.dumps(
                {
                    "error": {
                        "message": "You exceeded your current quota, please check your "
                        "plan and billing details.",
                        "type": "insufficient_quota",
                        "param": None,
                        "code": "insufficient_quota",
                    }
                }
            ),
            429,
            content_type="application/json",
        )
    )
    with pytest.raises(QuotaExhausted, match="no credit left"):
        fake.model().complete(ask())


def test_401_names_the_variable_and_hides_the_key(httpserver) -> None:
    fake = fake_openai(httpserver)
    fake.auth_failure()
    with pytest.raises(AuthError) as caught:
        fake.model().complete(ask())
    assert "OPENAI_COMPAT_API_KEY was rejected (401)" in caught.value.message
    assert TEST_KEY not in caught.value.message and len(fake.requests) == 1


def test_local_server_without_key_sends_none_and_explains_401(httpserver) -> None:
    fake = fake_openai(httpserver)
    model = fake.model(env={"SELFFORGE_CONFIG_DIR": str(fake.config_dir)})
    with pytest.raises(AuthError, match=r"no key was sent .*OPENAI_COMPAT_API_KEY"):
        model.complete(ask())
    assert "Authorization" not in fake.headers[0]


def test_500_then_success(httpserver) -> None:
    fake = fake_openai(httpserver, ["recovered"])
    fake.server_error(500)
    assert fake.model().complete(ask()).content == "recovered"


def test_malformed_and_slow(httpserver) -> None:
    fake = fake_openai(httpserver, ["a", "b"])
    fake.malformed()
    assert fake.model().complete(ask()).content == "a"
    fake.slow(0.3)
    with pytest.raises(ModelTimeout):
        fake.model(timeout_s=0.1, max_retries=0).complete(ask())
    time.sleep(0.3)  # the test server is single-threaded: let it finish the slow answer


def test_missing_usage_is_estimated(httpserver) -> None:
    fake = fake_openai(httpserver)
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hello there"}}]}
    fake.faults.append(lambda: Response(json.dumps(body), 200, content_type="application/json"))
    reply = fake.model().complete(ask())
    assert (
        reply.content == "hello there"
        and reply.usage.input_tokens > 0
        and reply.usage.output_tokens > 0
    )


def test_context_too_long_is_a_bad_request(httpserver) -> None:
    fake = fake_openai(httpserver)
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    fake.faults.append(lambda: Response(json.dumps(body), 400, content_type="application/json"))
    with pytest.raises(BadRequest, match="maximum context length"):
        fake.model().complete(ask())
    assert len(fake.requests) == 1


def test_list_models(httpserver) -> None:
    assert fake_openai(httpserver).model().list_models() == ["gpt-4.1-mini"]
