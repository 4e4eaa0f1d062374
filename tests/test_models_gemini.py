"""Gemini's generateContent client against a real local server answering like Gemini."""

from __future__ import annotations

import time

import pytest

from providers.bodies import gemini_error
from selfforge.models import Message, Request
from selfforge.models.base import (
    AuthError,
    MalformedResponse,
    ModelTimeout,
    QuotaExhausted,
    ServerError,
)

from provider_fakes import TEST_KEY, FakeTime, fake_gemini


def ask(text: str = "Fix add()", role: str = "propose") -> Request:
    return Request(role=role, messages=[Message("system", "You edit code."), Message("user", text)])


def test_success_records_usage_with_thinking_as_output(httpserver) -> None:
    fake = fake_gemini(httpserver, ["calc.py\n<<<<<<< SEARCH"])
    fake.usage = {
        "input_tokens": 1000,
        "output_tokens": 300,
        "cached_tokens": 200,
        "thinking_tokens": 120,
    }
    reply = fake.model().complete(ask())
    assert reply.content == "calc.py\n<<<<<<< SEARCH"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 300)
    assert (reply.usage.cached_tokens, reply.usage.thinking_tokens) == (200, 120)
    assert reply.cost_usd == 0.0  # a local server is free
    body = fake.requests[0]
    assert body["systemInstruction"] == {"parts": [{"text": "You edit code."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Fix add()"}]}]


def test_key_travels_in_a_header_not_the_url(httpserver) -> None:
    fake = fake_gemini(httpserver, ["ok"])
    fake.model().complete(ask())
    assert fake.headers[0]["X-Goog-Api-Key"] == TEST_KEY
    log = " ".join(str(req.url) for req, _ in httpserver.log)
    assert TEST_KEY not in log and "key=" not in log


def test_429_waits_for_retry_delay_then_succeeds(httpserver) -> None:
    fake = fake_gemini(httpserver, ["done"])
    fake.rate_limit_once(retry_s=0.3)
    waits: list[str] = []
    clock = FakeTime()
    reply = fake.model(on_wait=waits.append, **clock.settings()).complete(ask())
    assert reply.content == "done"
    assert clock.waits == [0.3]
    assert len(fake.requests) == 2 and "retrying in 0.3s" in waits[0]
    assert "(429): GenerateRequestsPerMinutePerProjectPerModel-FreeTier, limit 10" in waits[0]


def test_per_day_quota_stops_without_retrying(httpserver) -> None:
    fake = fake_gemini(httpserver, ["never"])
    fake.daily_quota()
    with pytest.raises(QuotaExhausted) as caught:
        fake.model().complete(ask())
    err = caught.value
    assert len(fake.requests) == 1
    assert err.limit == "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    assert err.resets and "UTC" in err.resets
    assert "per-day quota" in err.message and "limit 250" in err.message
    assert "midnight Pacific" in err.message


def test_invalid_key_is_not_retried_and_says_what_to_fix(httpserver) -> None:
    fake = fake_gemini(httpserver, ["never"])
    fake.auth_failure()
    with pytest.raises(AuthError) as caught:
        fake.model().complete(ask())
    assert len(fake.requests) == 1
    message = caught.value.message
    assert "GEMINI_API_KEY was rejected" in message and "aistudio.google.com" in message
    assert TEST_KEY not in message and TEST_KEY not in repr(caught.value)


def test_wrong_key_is_rejected_by_the_server(httpserver) -> None:
    fake = fake_gemini(httpserver)
    model = fake.model(env={**fake.env, "GEMINI_API_KEY": "wrong-key-value-xyz"})
    with pytest.raises(AuthError, match=r"GEMINI_API_KEY was rejected \(400\)"):
        model.complete(ask())


def test_401_unauthenticated(httpserver) -> None:
    fake = fake_gemini(httpserver)
    message = (
        "Request had invalid authentication credentials. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential."
    )
    fake.faults.append(lambda: gemini_error(401, "UNAUTHENTICATED", message))
    with pytest.raises(AuthError, match=r"GEMINI_API_KEY was rejected \(401\)"):
        fake.model().complete(ask())
    assert len(fake.requests) == 1


def test_500_backs_off_and_retries(httpserver) -> None:
    fake = fake_gemini(httpserver, ["after the storm"])
    fake.server_error(500)
    fake.server_error(503)
    assert fake.model().complete(ask()).content == "after the storm"
    assert len(fake.requests) == 3


def test_persistent_500_gives_up_after_max_retries(httpserver) -> None:
    fake = fake_gemini(httpserver)
    for _ in range(5):
        fake.server_error(500)
    with pytest.raises(ServerError, match="gave up after 3 tries"):
        fake.model(max_retries=2).complete(ask())
    assert len(fake.requests) == 3


def test_malformed_body_is_retried_then_reported(httpserver) -> None:
    fake = fake_gemini(httpserver, ["fine"])
    fake.malformed()
    assert fake.model().complete(ask()).content == "fine"
    fake.malformed()
    with pytest.raises(MalformedResponse, match="not JSON"):
        fake.model(max_retries=0).complete(ask())


def test_slow_response_times_out(httpserver) -> None:
    fake = fake_gemini(httpserver, ["late"])
    fake.slow(0.3)
    with pytest.raises(ModelTimeout, match=r"no answer within 0\.1s"):
        fake.model(timeout_s=0.1, max_retries=0).complete(ask())
    time.sleep(0.3)  # the test server is single-threaded: let it finish the slow answer


def test_slow_response_is_retried(httpserver) -> None:
    fake = fake_gemini(httpserver, ["late", "on time"])
    fake.slow(0.3)
    # The backoff (0.3-0.6s) outlasts the slow answer, so the retry finds the server free.
    model = fake.model(timeout_s=0.1, max_retries=1, backoff_base_s=0.6, backoff_cap_s=0.6)
    assert model.complete(ask()).content == "on time"


def test_list_models_keeps_generate_content_models(httpserver) -> None:
    fake = fake_gemini(httpserver)
    assert fake.model().list_models() == ["gemini-2.5-flash"]


def test_missing_key_is_a_usage_error_naming_the_variable(tmp_path) -> None:
    from selfforge.errors import UsageError
    from selfforge.models import from_spec

    with pytest.raises(UsageError, match="GEMINI_API_KEY is not set"):
        from_spec("gemini:gemini-2.5-flash", env={"SELFFORGE_CONFIG_DIR": str(tmp_path)})


def test_fake_answers_by_prompt_content(httpserver) -> None:
    fake = fake_gemini(httpserver, ["general"])
    fake.answer_when("Review this", "APPROVE: fine")
    model = fake.model()
    assert model.complete(ask("Review this change")).content == "APPROVE: fine"
    assert model.complete(ask("Review this change")).content == "general"
