"""Small differences between servers, dropped connections, and keys kept out of reprs."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from werkzeug import Response

from selfforge.models import Message, Request, from_spec
from selfforge.models.base import ModelUnreachable, QuotaExhausted, ServerError
from selfforge.models.openai_compat import usage_from

from provider_fakes import TEST_KEY, FakeTime, fake_gemini, fake_ollama, fake_openai


def ask() -> Request:
    return Request(role="propose", messages=[Message("user", "Fix add()")])


def _dropping_server(drops: int) -> tuple[str, list[int]]:
    """A TCP server that closes the first ``drops`` POSTs without answering (and answers
    the context-size probes, GETs, with 404)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    seen: list[int] = []

    def serve() -> None:
        while len(seen) < drops:
            conn, _ = listener.accept()
            if conn.recv(65536).startswith(b"GET"):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            else:
                seen.append(1)
            conn.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1", seen


def test_dropped_connections_are_retried_then_reported(tmp_path) -> None:
    base, seen = _dropping_server(drops=3)
    model = from_spec(
        f"openai:m@{base}",
        env={"SELFFORGE_CONFIG_DIR": str(tmp_path)},
        max_retries=2,
        **FakeTime().settings(),
    )
    with pytest.raises(ServerError, match=r"connection failed.*gave up after 3 tries"):
        model.complete(ask())
    assert len(seen) == 3


def test_connection_refused_is_unreachable_naming_host_and_cause(tmp_path) -> None:
    model = from_spec(
        "ollama:qwen2.5-coder:7b@http://127.0.0.1:9",
        env={"SELFFORGE_CONFIG_DIR": str(tmp_path)},
        **FakeTime().settings(),
    )
    with pytest.raises(ModelUnreachable) as caught:
        model.complete(ask())
    assert "Ollama qwen2.5-coder:7b: cannot reach 127.0.0.1:9 (connection refused)" in str(
        caught.value
    )
    assert not caught.value.retryable  # the run stops instead of backing off for minutes


def test_unknown_host_is_unreachable(tmp_path) -> None:
    model = from_spec(
        "openai:m@http://no-such-host.invalid:8080/v1", max_retries=0, **FakeTime().settings()
    )
    with pytest.raises(ModelUnreachable, match=r"no-such-host\.invalid:8080 \(no such host\)"):
        model.complete(ask())


def test_inline_thinking_is_stripped(httpserver) -> None:
    fake = fake_ollama(
        httpserver, ["<think>\nMaybe edit calc.py.\n</think>\n\ncalc.py\n<<<<<<< SEARCH"]
    )
    assert fake.model().complete(ask()).content == "calc.py\n<<<<<<< SEARCH"


def test_inline_thinking_is_stripped_on_openai_compatible_servers(httpserver) -> None:
    fake = fake_openai(httpserver, ["<think>hmm</think>answer"])
    assert fake.model().complete(ask()).content == "answer"


def test_openrouter_free_models_per_day_is_a_quota(httpserver) -> None:
    fake = fake_openai(httpserver)
    reset_ms = int((time.time() + 5 * 3600) * 1000)
    body = {
        "error": {
            "message": "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock "
            "1000 free model requests per day",
            "code": 429,
            "metadata": {
                "headers": {
                    "X-RateLimit-Limit": "50",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset": str(reset_ms),
                }
            },
        }
    }
    fake.faults.append(lambda: Response(json.dumps(body), 429, content_type="application/json"))
    with pytest.raises(QuotaExhausted) as caught:
        fake.model().complete(ask())
    assert caught.value.resets and "(in 4h 5" in caught.value.resets
    assert len(fake.requests) == 1


def test_gemini_openai_endpoint_usage_counts_thinking() -> None:
    # Gemini's OpenAI-compatible endpoint leaves thinking out of completion_tokens.
    usage = usage_from({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 220}, "", "")
    assert (usage.output_tokens, usage.thinking_tokens) == (120, 100)
    # Some proxies report the thinking only under completion_tokens_details.
    details = {"reasoning_tokens": 60}
    raw = {"prompt_tokens": 21, "completion_tokens": 0, "completion_tokens_details": details}
    assert (usage_from(raw, "", "").output_tokens, usage_from(raw, "", "").thinking_tokens) == (
        60,
        60,
    )


def test_no_key_in_reprs_or_errors(httpserver) -> None:
    fake = fake_gemini(httpserver)
    model = fake.model()
    texts = [
        repr(model),
        repr(model.client.transport),
        repr(model.client.endpoint),
        repr(vars(model)),
    ]
    assert all(TEST_KEY not in text for text in texts)
    fake.server_error(500)
    with pytest.raises(ServerError) as caught:
        fake.model(max_retries=0).complete(ask())
    assert TEST_KEY not in str(caught.value) and TEST_KEY not in repr(caught.value)


def test_server_echoing_the_key_is_masked(httpserver) -> None:
    fake = fake_openai(httpserver)
    body = {
        "error": {"message": f"bad request from key {TEST_KEY}", "type": "invalid_request_error"}
    }
    fake.faults.append(lambda: Response(json.dumps(body), 422, content_type="application/json"))
    with pytest.raises(Exception) as caught:
        fake.model().complete(ask())
    assert TEST_KEY not in str(caught.value) and "***" in str(caught.value)


def _as_list(response: Response) -> Response:
    # Gemini's OpenAI-compatible endpoint wraps its native error object in a list.
    response.set_data(json.dumps([json.loads(response.get_data())]))
    return response


def test_gemini_openai_endpoint_errors(httpserver) -> None:
    from providers.bodies import gemini_quota

    fake = fake_openai(httpserver, ["ok"], model="gemini-2.5-flash")
    minute = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    fake.faults.append(lambda: _as_list(gemini_quota("gemini-2.5-flash", minute, "10", "0.05s")))
    assert fake.model().complete(ask()).content == "ok"
    day = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    fake.faults.append(lambda: _as_list(gemini_quota("gemini-2.5-flash", day, "250", "41s")))
    with pytest.raises(QuotaExhausted, match="per-day quota"):
        fake.model().complete(ask())
