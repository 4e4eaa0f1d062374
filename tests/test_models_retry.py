"""Retries and back-off of model calls, against real HTTP servers on localhost; every
wait goes through an injected sleep, so the waits asked for are checked and take no time."""

from __future__ import annotations

import pytest

from selfforge.models import Message, Request, from_spec
from selfforge.models.base import AuthError, ModelUnreachable, QuotaExhausted, ServerError

from provider_fakes import FakeTime, fake_anthropic, fake_gemini, fake_openai


def ask() -> Request:
    return Request(role="propose", messages=[Message("user", "Fix add()")])


@pytest.mark.parametrize("make", [fake_gemini, fake_openai, fake_anthropic])
def test_the_servers_retry_hint_is_the_wait(httpserver, make) -> None:
    fake = make(httpserver, ["after the wait"])
    fake.rate_limit_once(retry_s=7)  # RetryInfo's retryDelay, or a Retry-After header
    clock, notes = FakeTime(), []
    model = fake.model(on_wait=notes.append, **clock.settings())
    assert model.complete(ask()).content == "after the wait"
    # Waited once, exactly as asked: the pacer, told to hold off every caller for 7 s,
    # found the wait over instead of waiting it again.
    assert clock.waits == [7.0]
    assert len(fake.requests) == 2 and "retrying in 7.0s" in notes[0]


def test_server_errors_back_off_exponentially_with_jitter_under_the_cap(httpserver) -> None:
    fake = fake_gemini(httpserver, ["at last"])
    for _ in range(6):
        fake.server_error(503)
    clock = FakeTime()
    model = fake.model(backoff_base_s=1.0, backoff_cap_s=8.0, max_retries=6, **clock.settings())
    assert model.complete(ask()).content == "at last"
    # Before retry n: half of min(cap, base * 2**n) plus a random part of the other half.
    ceilings = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert len(clock.waits) == len(ceilings)
    for wait, ceiling in zip(clock.waits, ceilings, strict=True):
        assert ceiling / 2 <= wait <= ceiling


def test_retries_stop_at_the_maximum_and_say_so(httpserver) -> None:
    fake = fake_gemini(httpserver, ["never"])
    for _ in range(3):
        fake.server_error(500)
    clock = FakeTime()
    with pytest.raises(ServerError, match="gave up after 3 tries"):
        fake.model(max_retries=2, **clock.settings()).complete(ask())
    assert len(fake.requests) == 3 and len(clock.waits) == 2


def test_auth_errors_are_never_retried(httpserver) -> None:
    fake = fake_gemini(httpserver, ["never"])
    fake.auth_failure()
    clock = FakeTime()
    with pytest.raises(AuthError):
        fake.model(**clock.settings()).complete(ask())
    assert len(fake.requests) == 1 and clock.waits == []


def test_a_hint_past_max_wait_stops_without_waiting(httpserver) -> None:
    fake = fake_gemini(httpserver, ["never"])
    fake.rate_limit_once(retry_s=3600)
    clock = FakeTime()
    with pytest.raises(QuotaExhausted, match="resume it then"):
        fake.model(max_wait_s=60, **clock.settings()).complete(ask())
    assert len(fake.requests) == 1 and clock.waits == []


def test_a_refused_connection_is_tried_three_times_quickly(tmp_path) -> None:
    clock = FakeTime()
    model = from_spec(
        "ollama:qwen2.5-coder:7b@http://127.0.0.1:9",
        env={"SELFFORGE_CONFIG_DIR": str(tmp_path)},
        **clock.settings(),
    )
    with pytest.raises(ModelUnreachable, match="connection refused"):
        model.complete(ask())
    # Seconds, not the minutes a busy server gets: nothing is listening.
    assert clock.waits == [0.5, 1.0]


def test_the_wait_between_connection_tries_is_a_retry_setting(tmp_path) -> None:
    (tmp_path / "models.toml").write_text("[retry]\nconnect_backoff_s = 0.2\n")
    clock = FakeTime()
    model = from_spec(
        "openai:m@http://127.0.0.1:9/v1",
        env={"SELFFORGE_CONFIG_DIR": str(tmp_path)},
        max_retries=0,
        **clock.settings(),
    )
    with pytest.raises(ModelUnreachable):
        model.complete(ask())
    assert clock.waits == [0.2, 0.4]
