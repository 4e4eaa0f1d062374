"""Local servers' context-size endpoints, the length finish reason on every wire, the
generation settings each wire carries, and context-size errors, against real HTTP fakes.

Bodies are shaped as each server documents or sends them: llama.cpp (``/v1/models``
``meta.n_ctx``, ``/props``), vLLM (``max_model_len``), LM Studio (``/api/v0/models``),
Ollama (``/api/show``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response

from providers import bodies
from selfforge.models import Message, Request, from_spec
from selfforge.models.base import ContextTooLong
from selfforge.models.generation import Generation, RoleSettings

from provider_fakes import TEST_KEY, _quiet_config_dir

USAGE = {"input_tokens": 50, "output_tokens": 20, "cached_tokens": 0, "thinking_tokens": 0}


def ask(text: str = "Fix add()", role: str = "propose") -> Request:
    return Request(role=role, messages=[Message("user", text)])


class Server:
    """Routes GET paths to fixed JSON; every POST gets ``answer`` and is recorded."""

    def __init__(
        self, httpserver: HTTPServer, gets: dict[str, Any], answer: Callable[[], Response]
    ):
        self.gets, self.answer = gets, answer
        self.posts: list[dict[str, Any]] = []
        self.paths: list[str] = []
        httpserver.expect_request("/").respond_with_data("")  # placeholder, replaced below
        httpserver.clear()
        httpserver.expect_request(_ANY).respond_with_handler(self._handle)
        self.url = httpserver.url_for("").rstrip("/")

    def _handle(self, request: WRequest) -> Response:
        self.paths.append(request.path)
        if request.method == "POST" and request.path != "/api/show":
            self.posts.append(request.get_json(silent=True) or {})
            return self.answer()
        body = self.gets.get(request.path)
        if body is None:
            return Response('{"error": "not found"}', 404, content_type="application/json")
        return Response(json.dumps(body), 200, content_type="application/json")


class _AnyPath:
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


_ANY = _AnyPath()


def _edited(response: Response, change: Callable[[dict[str, Any]], None]) -> Response:
    body = json.loads(response.get_data())
    change(body)
    return Response(json.dumps(body), 200, content_type="application/json")


def openai_reply(text: str = "ok", finish: str = "stop") -> Response:
    def set_finish(body: dict[str, Any]) -> None:
        body["choices"][0]["finish_reason"] = finish

    return _edited(bodies.openai_success(text, "m", USAGE), set_finish)


def model(spec: str, **settings: Any) -> Any:
    env = {"SELFFORGE_CONFIG_DIR": str(_quiet_config_dir()), "OPENAI_COMPAT_API_KEY": TEST_KEY}
    env.update({"GEMINI_API_KEY": TEST_KEY, "ANTHROPIC_API_KEY": TEST_KEY})
    return from_spec(spec, env=env, timeout_s=5.0, backoff_base_s=0.01, **settings)


# --- the window each server reports ----------------------------------------------------

LLAMA_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "smollm2-135m-instruct.gguf",
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_ctx": 2048},
        }
    ],
}


def test_llama_cpp_window_from_v1_models_meta(httpserver: HTTPServer) -> None:
    server = Server(httpserver, {"/v1/models": LLAMA_MODELS}, openai_reply)
    m = model(f"llamacpp:default@{server.url}/v1")
    assert m.context_window == 2048  # not the catalog's 32768, nor n_ctx_train
    m.complete(ask())
    assert server.posts[0]["max_tokens"] == 512  # a quarter of the window, not 8192


def test_llama_cpp_window_from_props_when_models_omit_it(httpserver: HTTPServer) -> None:
    older = json.loads(json.dumps(LLAMA_MODELS))
    del older["data"][0]["meta"]["n_ctx"]
    props = {"default_generation_settings": {"n_ctx": 4096, "temperature": 0.8}, "total_slots": 1}
    server = Server(httpserver, {"/v1/models": older, "/props": props}, openai_reply)
    assert model(f"openai:anything@{server.url}/v1").context_window == 4096


def test_vllm_window_is_max_model_len(httpserver: HTTPServer) -> None:
    listing = {
        "object": "list",
        "data": [
            {
                "id": "Qwen/Qwen2.5-Coder-7B-Instruct",
                "object": "model",
                "owned_by": "vllm",
                "root": "Qwen/Qwen2.5-Coder-7B-Instruct",
                "parent": None,
                "max_model_len": 8192,
            },
            {"id": "other", "object": "model", "max_model_len": 131072},
        ],
    }
    server = Server(httpserver, {"/v1/models": listing}, openai_reply)
    assert model(f"vllm:Qwen/Qwen2.5-Coder-7B-Instruct@{server.url}/v1").context_window == 8192


def test_lm_studio_window_is_the_loaded_context_length(httpserver: HTTPServer) -> None:
    name = "qwen2.5-coder-7b-instruct"
    gets = {
        "/v1/models": {"object": "list", "data": [{"id": name, "object": "model"}]},
        "/api/v0/models": {
            "object": "list",
            "data": [
                {
                    "id": name,
                    "object": "model",
                    "type": "llm",
                    "state": "loaded",
                    "max_context_length": 32768,
                    "loaded_context_length": 4096,
                }
            ],
        },
    }
    server = Server(httpserver, gets, openai_reply)
    assert model(f"lmstudio:{name}@{server.url}/v1").context_window == 4096


def test_ollama_window_is_capped_by_the_modelfile_num_ctx(httpserver: HTTPServer) -> None:
    show = json.loads(bodies.ollama_show("qwen2.5-coder:7b", 32768).get_data())
    show["parameters"] = 'num_ctx 8192\nstop "<|im_end|>"'

    def answer() -> Response:
        return bodies.ollama_success("ok", "qwen2.5-coder:7b", USAGE)

    server = Server(httpserver, {}, answer)
    httpserver.clear()
    httpserver.expect_request("/api/show").respond_with_json(show)
    httpserver.expect_request(_ANY).respond_with_handler(server._handle)
    m = model(f"ollama:qwen2.5-coder:7b@{server.url}")
    assert m.context_window == 8192
    m.complete(ask())
    assert server.posts[0]["options"]["num_ctx"] == 8192


def test_a_server_that_reports_no_window_falls_back_to_the_catalog(httpserver) -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model"}]}
    server = Server(httpserver, {"/v1/models": listing}, openai_reply)
    assert model(f"openai:m@{server.url}/v1").context_window == 32768


# --- generation settings on every wire -------------------------------------------------


def test_openai_compatible_requests_carry_max_tokens_and_temperature(httpserver) -> None:
    server = Server(httpserver, {"/v1/models": LLAMA_MODELS}, openai_reply)
    per_role = {"review": RoleSettings(max_output_tokens=64, temperature=0.0)}
    generation = Generation(max_output_tokens=300, temperature=0.5, per_role=per_role)
    m = model(f"llamacpp:default@{server.url}/v1", generation=generation)
    m.complete(ask())
    m.complete(ask(role="review"))
    propose, review = server.posts
    assert (propose["max_tokens"], propose["temperature"]) == (300, 0.5)
    assert (review["max_tokens"], review["temperature"]) == (64, 0.0)


def test_gemini_sends_generation_config(httpserver: HTTPServer) -> None:
    server = Server(httpserver, {}, lambda: bodies.gemini_success("ok", "g", USAGE))
    model(f"gemini:gemini-2.5-flash@{server.url}").complete(ask())
    assert server.posts[0]["generationConfig"] == {"maxOutputTokens": 32768, "temperature": 0.2}
    assert not [p for p in server.paths if p.endswith("/models")]  # hosted: catalog window


def test_anthropic_sends_max_tokens_and_temperature(httpserver: HTTPServer) -> None:
    server = Server(httpserver, {}, lambda: bodies.anthropic_success("ok", "c", USAGE))
    generation = Generation(temperature=0.0)
    model(f"anthropic:claude-sonnet-4-5@{server.url}", generation=generation).complete(ask())
    assert (server.posts[0]["max_tokens"], server.posts[0]["temperature"]) == (16000, 0.0)


def test_reasoning_models_get_their_only_temperature() -> None:
    from selfforge.models.catalog import model_facts

    assert model_facts("openai:o3-mini").temperature == 1.0
    assert model_facts("openai:gpt-4.1-mini").temperature == 0.2


# --- the length finish reason on every wire --------------------------------------------


def _cut(wire: str) -> Response:
    if wire == "openai":
        return openai_reply("calc.py\n<<<<<<< SEARCH\ndef add(", "length")
    if wire == "gemini":
        return _edited(
            bodies.gemini_success("calc.py", "g", USAGE),
            lambda b: b["candidates"][0].update(finishReason="MAX_TOKENS"),
        )
    if wire == "anthropic":
        return _edited(
            bodies.anthropic_success("calc.py", "c", USAGE),
            lambda b: b.update(stop_reason="max_tokens"),
        )
    return _edited(
        bodies.ollama_success("calc.py", "q", USAGE), lambda b: b.update(done_reason="length")
    )


@pytest.mark.parametrize(
    ("wire", "spec"),
    [
        ("openai", "openai:m@{url}/v1"),
        ("gemini", "gemini:gemini-2.5-flash@{url}"),
        ("anthropic", "anthropic:claude-sonnet-4-5@{url}"),
        ("ollama", "ollama:qwen2.5-coder:7b@{url}"),
    ],
)
def test_a_reply_cut_at_the_output_limit_is_truncated(httpserver, wire: str, spec: str) -> None:
    server = Server(httpserver, {}, lambda: _cut(wire))
    reply = model(spec.format(url=server.url)).complete(ask())
    assert reply.truncated and reply.content


def test_a_complete_reply_is_not_truncated(httpserver: HTTPServer) -> None:
    server = Server(httpserver, {}, openai_reply)
    assert not model(f"openai:m@{server.url}/v1").complete(ask()).truncated


# --- context-size errors ---------------------------------------------------------------


def test_llama_cpp_context_size_error_is_not_retried(httpserver: HTTPServer) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 2400,
            "n_ctx": 2048,
        }
    }
    server = Server(
        httpserver, {}, lambda: Response(json.dumps(body), 400, content_type="application/json")
    )
    with pytest.raises(ContextTooLong, match=r"does not fit.*-c 8192"):
        model(f"openai:m@{server.url}/v1").complete(ask())
    assert len(server.posts) == 1


def test_vllm_maximum_context_length_error_is_context_too_long(httpserver) -> None:
    body = {
        "object": "error",
        "message": "This model's maximum context length is 2048 tokens. However, you "
        "requested 2600 tokens (2100 in the messages, 500 in the completion).",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    server = Server(
        httpserver, {}, lambda: Response(json.dumps(body), 400, content_type="application/json")
    )
    with pytest.raises(ContextTooLong):
        model(f"vllm:m@{server.url}/v1").complete(ask())
    assert len(server.posts) == 1


def test_the_cap_shrinks_to_fit_and_a_prompt_that_cannot_fit_is_never_sent(httpserver) -> None:
    server = Server(httpserver, {"/v1/models": LLAMA_MODELS}, openai_reply)
    m = model(f"llamacpp:default@{server.url}/v1")
    m.complete(ask("word " * 1200))  # ~1500 tokens: 2048 - 128 margin leaves ~420
    assert 128 <= server.posts[0]["max_tokens"] < 512
    with pytest.raises(ContextTooLong, match=r"window is 2048; .*-c 4096"):
        m.complete(ask("word " * 2500))
    assert len(server.posts) == 1


def test_after_a_context_size_refusal_the_next_request_asks_for_less(httpserver) -> None:
    refusal = {"error": {"code": 400, "type": "exceed_context_size_error", "message": "too big"}}
    answers = [Response(json.dumps(refusal), 400, content_type="application/json")]
    server = Server(
        httpserver,
        {"/v1/models": LLAMA_MODELS},
        lambda: answers.pop(0) if answers else openai_reply(),
    )
    m = model(f"llamacpp:default@{server.url}/v1")
    prompt = "word " * 1000
    with pytest.raises(ContextTooLong):
        m.complete(ask(prompt))
    m.complete(ask(prompt))
    first, second = server.posts
    assert second["max_tokens"] < first["max_tokens"]


# --- selfforge models --probe -----------------------------------------------------------


def test_models_probe_shows_window_output_latency_and_speed(httpserver, tmp_path) -> None:
    from conftest import cli

    server = Server(httpserver, {"/v1/models": LLAMA_MODELS}, openai_reply)
    env = {"SELFFORGE_CONFIG_DIR": str(_quiet_config_dir())}
    proc = cli(
        "models", "--probe", "--repo", str(tmp_path), "--model",
        f"llamacpp:default@{server.url}/v1", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "reachable:  yes" in proc.stdout
    assert "context:    2048 tokens (from the server)" in proc.stdout
    assert "max output: 512 tokens" in proc.stdout
    assert "tokens/s" in proc.stdout
    assert server.posts and server.posts[0]["max_tokens"] == 96


def test_models_probe_of_a_stopped_server_names_host_and_cause(tmp_path) -> None:
    from conftest import cli

    env = {"SELFFORGE_CONFIG_DIR": str(_quiet_config_dir())}
    spec = "llamacpp:default@http://127.0.0.1:9/v1"
    proc = cli("models", "--probe", "--repo", str(tmp_path), "--model", spec, env=env)
    assert proc.returncode == 1
    assert "reachable:  no: " in proc.stdout and "127.0.0.1:9 (connection refused)" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
