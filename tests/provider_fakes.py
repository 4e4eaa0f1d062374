"""Fake model providers on a real local HTTP server (pytest-httpserver).

Each fake answers like the real API, with bodies shaped as the providers document
them, so the clients under test meet the same JSON they meet in production:

    fake = fake_gemini(httpserver, ["first reply", "second reply"])
    fake.rate_limit_once()             # next call: 429 with RetryInfo retryDelay
    model = fake.model()               # from_spec(fake.spec, **fake.settings())
    # or, for code that builds the model itself from a spec and os.environ:
    fake.apply_env(monkeypatch); run(..., model=fake.spec)

Faults queue up and are served before replies, one per request: ``rate_limit_once``,
``daily_quota``, ``auth_failure``, ``server_error``, ``malformed``, ``slow``. A reply
queue that runs dry answers "" (no edits); ``answer_when(text, ...)`` gives requests
whose prompt contains ``text`` their own queue (like the scripted model's roles).
``fake.requests`` holds the JSON bodies received. Wires: gemini, openai, anthropic, ollama.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response

from providers import bodies
from selfforge.models import from_spec

TEST_KEY = "sf-test-key-0123456789abcdef"
DEFAULT_USAGE = {"input_tokens": 120, "output_tokens": 30, "cached_tokens": 0, "thinking_tokens": 0}
_KEY_VARS = {
    "gemini": "GEMINI_API_KEY",
    "openai": "OPENAI_COMPAT_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "ollama": "OLLAMA_API_KEY",
}


# --- the fake server ------------------------------------------------------------------

_WIRE = {
    "gemini": ("gemini", "gemini-2.5-flash", ""),
    "openai": ("openai", "gpt-4.1-mini", "/v1"),
    "anthropic": ("anthropic", "claude-sonnet-4-5", ""),
    "ollama": ("ollama", "qwen2.5-coder:7b", ""),
}


class FakeProvider:
    def __init__(
        self, server: HTTPServer, wire: str, replies: list[str], model: str | None = None
    ) -> None:
        provider, default_model, prefix = _WIRE[wire]
        self.server, self.wire, self.provider = server, wire, provider
        self.model_name = model or default_model
        self.prefix = prefix
        self.replies = list(replies)
        self.rules: list[tuple[str, list[str]]] = []
        self.usage = dict(DEFAULT_USAGE)
        self.faults: list[Callable[[], Response]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.context_length = 32768  # what Ollama's /api/show reports
        self.config_dir = _quiet_config_dir()
        server.expect_request(re.compile(".*")).respond_with_handler(self._handle)

    # -- what tests use
    @property
    def base_url(self) -> str:
        return self.server.url_for("").rstrip("/") + self.prefix

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model_name}@{self.base_url}"

    @property
    def env(self) -> dict[str, str]:
        return {_KEY_VARS[self.wire]: TEST_KEY, "SELFFORGE_CONFIG_DIR": str(self.config_dir)}

    def settings(self, **overrides: Any) -> dict[str, Any]:
        base = {"env": self.env, "timeout_s": 5.0, "backoff_base_s": 0.01, "backoff_cap_s": 0.05}
        return {**base, **overrides}

    def model(self, **overrides: Any) -> Any:
        return from_spec(self.spec, **self.settings(**overrides))

    def apply_env(self, monkeypatch: Any) -> None:
        for name, value in self.env.items():
            monkeypatch.setenv(name, value)

    def reply(self, *texts: str) -> None:
        self.replies.extend(texts)

    def answer_when(self, prompt_contains: str, *texts: str) -> None:
        """Answer requests whose prompt contains ``prompt_contains`` from this queue first,
        e.g. ``fake.answer_when("Review this change", "APPROVE: fine")``."""
        self.rules.append((prompt_contains, list(texts)))

    # -- faults, served before replies, one per request
    def rate_limit_once(self, retry_s: float = 0.05) -> None:
        self.faults.append(lambda: self._rate_limit(retry_s))

    def daily_quota(self) -> None:
        self.faults.append(self._daily_quota)

    def auth_failure(self) -> None:
        self.faults.append(self._auth_failure)

    def server_error(self, status: int = 500) -> None:
        self.faults.append(lambda: self._server_error(status))

    def malformed(self) -> None:
        self.faults.append(
            lambda: Response(
                "<html><body>502 Bad Gateway</body></html>", 200, content_type="text/html"
            )
        )

    def slow(self, seconds: float) -> None:
        def answer() -> Response:
            time.sleep(seconds)
            return self._success()

        self.faults.append(answer)

    # -- serving
    def _handle(self, request: WRequest) -> Response:
        path = request.path
        if self.wire == "ollama" and path == "/api/show":
            return bodies.ollama_show(self.model_name, self.context_length)
        if request.method == "POST":
            self.requests.append(request.get_json(silent=True) or {})
            self.headers.append(dict(request.headers))
        if self.wire != "ollama" and not self._key_ok(request):
            return self._auth_failure()
        if request.method == "GET":
            return self._model_list()
        if self.faults:
            return self.faults.pop(0)()
        return self._success()

    def _key_ok(self, request: WRequest) -> bool:
        sent = (
            request.headers.get("x-goog-api-key")
            or request.headers.get("x-api-key")
            or request.headers.get("Authorization", "").removeprefix("Bearer ")
        )
        return sent == TEST_KEY

    def _success(self) -> Response:
        text = self._next_reply()
        return bodies.success(self.wire, text, self.model_name, self.usage)

    def _next_reply(self) -> str:
        prompt = json.dumps(self.requests[-1]) if self.requests else ""
        for needle, queue in self.rules:
            if queue and json.dumps(needle)[1:-1] in prompt:
                return queue.pop(0)
        return self.replies.pop(0) if self.replies else ""

    def _model_list(self) -> Response:
        return bodies.model_list(self.wire, self.model_name)

    def _rate_limit(self, retry_s: float) -> Response:
        return bodies.rate_limit(self.wire, self.model_name, retry_s)

    def _daily_quota(self) -> Response:
        return bodies.daily_quota(self.wire, self.model_name)

    def _auth_failure(self) -> Response:
        return bodies.auth_failure(self.wire)

    def _server_error(self, status: int) -> Response:
        return bodies.server_error(self.wire, status)


def _quiet_config_dir() -> Path:
    """A user config dir whose models.toml turns pacing off and makes backoff (and the
    waits between connection tries) tiny, so tests that build models from a spec alone
    (the loop's e2e tests, the CLI in a subprocess) never wait long. Removed when the
    test process ends."""
    path = Path(tempfile.mkdtemp(prefix="selfforge-test-config-"))
    atexit.register(shutil.rmtree, path, True)
    (path / "models.toml").write_text(
        "[retry]\nbackoff_base_s = 0.01\nbackoff_cap_s = 0.05\nconnect_backoff_s = 0.01\n\n"
        '[[models]]\nmatch = "*:*"\nrequests_per_minute = 0\n'
    )
    return path


def fake_gemini(
    server: HTTPServer, replies: list[str] | None = None, model: str | None = None
) -> FakeProvider:
    return FakeProvider(server, "gemini", replies or [], model)


def fake_openai(
    server: HTTPServer, replies: list[str] | None = None, model: str | None = None
) -> FakeProvider:
    return FakeProvider(server, "openai", replies or [], model)


def fake_anthropic(
    server: HTTPServer, replies: list[str] | None = None, model: str | None = None
) -> FakeProvider:
    return FakeProvider(server, "anthropic", replies or [], model)


def fake_ollama(
    server: HTTPServer, replies: list[str] | None = None, model: str | None = None
) -> FakeProvider:
    return FakeProvider(server, "ollama", replies or [], model)


class FakeTime:
    """A clock that moves only when slept on, recording every wait asked of it: pass
    ``sleep=t.sleep, clock=t.monotonic`` to ``from_spec`` and back-off takes no time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now

    def settings(self) -> dict[str, Any]:
        return {"sleep": self.sleep, "clock": self.monotonic}
