"""The Ollama client: native /api/chat with num_ctx, against a server answering like Ollama."""

from __future__ import annotations

import json
import time

import pytest
from werkzeug import Response

from selfforge.models import Message, Request
from selfforge.models.base import (
    AuthError,
    BadRequest,
    ContextTooLong,
    MalformedResponse,
    ModelTimeout,
    ServerError,
)

from provider_fakes import fake_ollama


def ask(text: str = "Fix add()") -> Request:
    return Request(role="propose", messages=[Message("user", text)])


def test_sends_num_ctx_capped_by_the_models_trained_length(httpserver) -> None:
    fake = fake_ollama(httpserver, ["edit"])
    fake.context_length = 16384  # less than the catalog's 32768 for coder models
    model = fake.model()
    reply = model.complete(ask())
    assert reply.content == "edit" and reply.cost_usd == 0.0
    # The catalog's 8192-token cap is lowered to a quarter of the window in force.
    assert fake.requests[0]["options"] == {
        "num_ctx": 16384,
        "num_predict": 4096,
        "temperature": 0.2,
    }
    assert fake.requests[0]["stream"] is False
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (120, 30)
    assert model.context_window == 16384


def test_a_prompt_larger_than_the_window_is_refused_before_it_is_sent(httpserver) -> None:
    fake = fake_ollama(httpserver, ["edit"])
    fake.context_length = 256
    with pytest.raises(ContextTooLong, match=r"window is 256.*-c 2048"):
        fake.model().complete(ask("word " * 400))
    assert fake.requests == []  # Ollama would have dropped the prompt's beginning


def test_model_not_pulled_says_how_to_pull_it(httpserver) -> None:
    fake = fake_ollama(httpserver)
    body = {"error": 'model "qwen2.5-coder:7b" not found, try pulling it first'}
    fake.faults.append(lambda: Response(json.dumps(body), 404, content_type="application/json"))
    with pytest.raises(BadRequest, match=r"ollama pull qwen2\.5-coder:7b"):
        fake.model().complete(ask())


def test_busy_and_crashed_runner_are_retried(httpserver) -> None:
    fake = fake_ollama(httpserver, ["ok"])
    fake.rate_limit_once()  # Ollama's 503 "server busy"
    fake.server_error(500)
    assert fake.model().complete(ask()).content == "ok"
    fake.server_error(500)
    with pytest.raises(ServerError, match="llama runner process has terminated"):
        fake.model(max_retries=0).complete(ask())


def test_missing_prompt_count_is_estimated(httpserver) -> None:
    fake = fake_ollama(httpserver)
    body = {
        "model": "qwen2.5-coder:7b",
        "message": {"role": "assistant", "content": "hi"},
        "done": True,
        "eval_count": 2,
    }
    fake.faults.append(lambda: Response(json.dumps(body), 200, content_type="application/json"))
    reply = fake.model().complete(ask("a fairly long prompt " * 10))
    assert reply.usage.input_tokens > 10 and reply.usage.output_tokens == 2


def test_malformed_and_timeout(httpserver) -> None:
    fake = fake_ollama(httpserver, ["late"])
    fake.malformed()
    with pytest.raises(MalformedResponse):
        fake.model(max_retries=0).complete(ask())
    fake.slow(0.3)
    with pytest.raises(ModelTimeout):
        fake.model(timeout_s=0.1, max_retries=0).complete(ask())
    time.sleep(0.3)  # the test server is single-threaded: let it finish the slow answer


def test_list_models(httpserver) -> None:
    assert fake_ollama(httpserver).model().list_models() == ["qwen2.5-coder:7b"]


def test_401_from_an_authenticating_ollama_names_the_variable(httpserver) -> None:
    fake = fake_ollama(httpserver)
    fake.auth_failure()
    model = fake.model(env={"SELFFORGE_CONFIG_DIR": str(fake.config_dir)})
    with pytest.raises(AuthError, match=r"no key was sent \(401\); set OLLAMA_API_KEY"):
        model.complete(ask())
