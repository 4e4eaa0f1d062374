"""Ollama's native ``/api/chat``, so the context size can be set per request.

Ollama silently drops the start of a prompt longer than its context (``num_ctx``), and
its default is small. So every request sends ``options.num_ctx``: the catalog's window
for the model, capped by the model's trained length from ``/api/show``; and a prompt
that still does not fit is logged as a warning before it is sent.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from selfforge.models.base import MalformedResponse, ModelError, Reply, Request, Usage
from selfforge.models.http import Endpoint, Transport, json_body, retry_after, snippet, status_error
from selfforge.models.tokens import estimate_tokens
from selfforge.models.turns import strip_thinking

log = logging.getLogger("selfforge.models")


class OllamaClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.label = f"Ollama {endpoint.spec.model}"
        headers = {}
        if endpoint.key:  # ollama.com and authenticating proxies
            headers["Authorization"] = f"Bearer {endpoint.key.get_secret_value()}"
        self.transport = Transport(self.label, endpoint.timeout_s, headers)
        base = endpoint.base_url.rstrip("/")
        # Accept the OpenAI-style base (".../v1") people copy from other tools.
        self.base = base.removesuffix("/v1")
        self._num_ctx: int | None = None

    @property
    def num_ctx(self) -> int:
        window = self.endpoint.facts.context_window
        if self._num_ctx is None:
            try:
                trained = self.trained_context_length()
            except ModelError:
                return window  # server unreachable: ask again on the next call
            self._num_ctx = min(window, trained) if trained else window
        return self._num_ctx

    def send(self, request: Request) -> Reply:
        prompt = "\n".join(m.content for m in request.messages)
        self._warn_if_too_long(estimate_tokens(prompt), request)
        started = time.monotonic()
        data = self.transport.call_json(
            "POST", f"{self.base}/api/chat", self._body(request), self.error
        )
        message = data.get("message")
        if not isinstance(message, dict) or "content" not in message:
            raise MalformedResponse(
                f"{self.label}: the answer has no message: {snippet(str(data))}"
            )
        content = strip_thinking(str(message.get("content") or ""))
        return Reply(
            content=content,
            usage=usage_from(data, prompt, content),
            model=str(self.endpoint.spec),
            latency_s=time.monotonic() - started,
        )

    def list_models(self) -> list[str]:
        data = self.transport.call_json("GET", f"{self.base}/api/tags", None, self.error)
        models = data.get("models") or []
        return [str(m.get("name") or m.get("model")) for m in models]

    def trained_context_length(self) -> int | None:
        """The model's context length as Ollama reports it, or None if it does not say.
        Raises a ModelError when the server cannot be reached."""
        response = self.transport.request(
            "POST", f"{self.base}/api/show", {"model": self.endpoint.spec.model}
        )
        try:
            info = json_body(response, self.label).get("model_info") or {}
        except MalformedResponse:
            return None
        lengths = [
            int(v) for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)
        ]
        return lengths[0] if lengths else None

    def close(self) -> None:
        self.transport.close()

    def _body(self, request: Request) -> dict[str, Any]:
        options: dict[str, Any] = {"num_ctx": self.num_ctx}
        if request.max_output_tokens:
            options["num_predict"] = request.max_output_tokens
        return {
            "model": self.endpoint.spec.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": False,
            "options": options,
        }

    def _warn_if_too_long(self, prompt_tokens: int, request: Request) -> None:
        reserve = request.max_output_tokens or 0
        if prompt_tokens + reserve > self.num_ctx:
            log.warning(
                "%s: the %s prompt is about %d tokens but the context is %d; Ollama will drop "
                "its beginning. Use a model with a larger window, or raise context_window for "
                "it in models.toml if the model supports more",
                self.label,
                request.role,
                prompt_tokens,
                self.num_ctx,
            )

    def error(self, response: httpx.Response) -> ModelError:
        try:
            err = json_body(response, self.label).get("error") or response.text
        except MalformedResponse:
            err = response.text
        message = str(err)
        if response.status_code == 404 and "not found" in message:
            return status_error(
                self.label,
                404,
                f"{message} (run `ollama pull {self.endpoint.spec.model}`)",
                self.endpoint.key_info,
            )
        delay = retry_after(response)
        return status_error(
            self.label, response.status_code, message, self.endpoint.key_info, delay
        )


def usage_from(data: dict[str, Any], prompt: str, content: str) -> Usage:
    # Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
    prompt_tokens = data.get("prompt_eval_count")
    return Usage(
        input_tokens=int(prompt_tokens) if prompt_tokens is not None else estimate_tokens(prompt),
        output_tokens=int(data.get("eval_count") or estimate_tokens(content)),
    )
