"""The Anthropic Messages client against a real local server answering like Anthropic."""

from __future__ import annotations

import json
import time

import pytest

from providers.bodies import anthropic_error
from selfforge.models import Message, Request
from selfforge.models.base import AuthError, MalformedResponse, ModelTimeout, QuotaExhausted

from provider_fakes import TEST_KEY, FakeTime, fake_anthropic


def ask() -> Request:
    return Request(
        role="review",
        messages=[Message("system", "You review."), Message("user", "Is it right?")],
    )


def test_success_counts_cache_reads_as_input(httpserver) -> None:
    fake = fake_anthropic(httpserver, ["APPROVE: good"])
    fake.usage = {
        "input_tokens": 3000,
        "output_tokens": 40,
        "cached_tokens": 2048,
        "thinking_tokens": 0,
    }
    reply = fake.model().complete(ask())
    assert reply.content == "APPROVE: good"
    assert (reply.usage.input_tokens, reply.usage.cached_tokens, reply.usage.output_tokens) == (
        3000,
        2048,
        40,
    )
    body, headers = fake.requests[0], fake.headers[0]
    assert body["system"] == "You review." and body["max_tokens"] == 16000
    assert body["messages"] == [{"role": "user", "content": "Is it right?"}]
    assert headers["X-Api-Key"] == TEST_KEY and headers["Anthropic-Version"] == "2023-06-01"


def test_429_retry_after_then_success(httpserver) -> None:
    fake = fake_anthropic(httpserver, ["ok"])
    fake.rate_limit_once(retry_s=0.1)
    clock = FakeTime()
    assert fake.model(**clock.settings()).complete(ask()).content == "ok"
    assert clock.waits == [0.1] and len(fake.requests) == 2


def test_529_overloaded_is_retried(httpserver) -> None:
    fake = fake_anthropic(httpserver, ["ok"])
    fake.server_error(529)
    fake.server_error(500)
    assert fake.model().complete(ask()).content == "ok"
    assert len(fake.requests) == 3


def test_empty_credit_balance_is_a_quota(httpserver) -> None:
    fake = fake_anthropic(httpserver)
    fake.daily_quota()
    with pytest.raises(QuotaExhausted, match=r"spending quota is used up.*add credit"):
        fake.model().complete(ask())
    assert len(fake.requests) == 1


def test_spend_limit_is_a_quota_that_resets_next_month(httpserver) -> None:
    fake = fake_anthropic(httpserver)
    fake.faults.append(
        lambda: _with_details(anthropic_error(429, "rate_limit_error", "Spend limit reached."))
    )
    with pytest.raises(QuotaExhausted) as caught:
        fake.model().complete(ask())
    assert caught.value.limit == "enforced_spend_limit_reached"
    assert caught.value.resets and caught.value.resets.endswith(")")


def _with_details(response):
    body = json.loads(response.get_data())
    body["error"]["details"] = {"error_code": "enforced_spend_limit_reached"}
    response.set_data(json.dumps(body))
    return response


def test_401_invalid_key(httpserver) -> None:
    fake = fake_anthropic(httpserver)
    fake.auth_failure()
    with pytest.raises(AuthError) as caught:
        fake.model().complete(ask())
    assert "ANTHROPIC_API_KEY was rejected (401): invalid x-api-key" in caught.value.message
    assert "console.anthropic.com" in caught.value.message
    assert len(fake.requests) == 1


def test_malformed_and_timeout(httpserver) -> None:
    fake = fake_anthropic(httpserver, ["late"])
    fake.malformed()
    with pytest.raises(MalformedResponse):
        fake.model(max_retries=0).complete(ask())
    fake.slow(0.3)
    with pytest.raises(ModelTimeout):
        fake.model(timeout_s=0.1, max_retries=0).complete(ask())
    time.sleep(0.3)  # the test server is single-threaded: let it finish the slow answer


def test_list_models(httpserver) -> None:
    assert fake_anthropic(httpserver).model().list_models() == ["claude-sonnet-4-5"]
