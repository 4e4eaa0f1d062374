"""Ollama's native ``/api/chat``, so the context size can be set per request.

Ollama silently drops the start of a prompt longer than its context (``num_ctx``), and
its default is small. So every request sends ``options.num_ctx``: the catalog's window
for the model, capped by the model's trained length and by a Modelfile's own
``num_ctx`` (both from ``/api/show``: whoever set the latter chose what the machine can
hold). A prompt that still does not fit is refused before it is sent
(``generation.fit_request``).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from selfforge.models.base import (
    MalformedResponse,
    ModelError,
    ModelUnreachable,
    Reply,
    Request,
    Usage,
)
from selfforge.models.http import Endpoint, Transport, json_body, retry_after, snippet, status_error
from selfforge.models.tokens import estimate_tokens
from selfforge.models.turns import strip_thinking


class OllamaClient:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.label = f"Ollama {endpoint.spec.model}"
        headers = {}
        if endpoint.key:  # ollama.com and authenticating proxies
            headers["Authorization"] = f"Bearer {endpoint.key.get_secret_value()}"
        self.transport = Transport.of(endpoint, self.label, headers)
        base = endpoint.base_url.rstrip("/")
        # Accept the OpenAI-style base (".../v1") people copy from other tools.
        self.base = base.removesuffix("/v1")
        self._num_ctx: int | None = None

    @property
    def num_ctx(self) -> int:
        window = self.endpoint.facts.context_window
        if self._num_ctx is None:
            try:
                limits = [n for n in self.model_context_lengths() if n]
            except ModelError:
                return window  # server unreachable: ask again on the next call
            self._num_ctx = min([window, *limits])
        return self._num_ctx

    def server_context_window(self) -> int:
        """The num_ctx every request sends; raises ModelUnreachable if nothing answers."""
        if self._num_ctx is None:
            self.model_context_lengths()  # raises when the server is down
        return self.num_ctx

    def send(self, request: Request) -> Reply:
        prompt = "\n".join(m.content for m in request.messages)
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
            truncated=data.get("done_reason") == "length",
        )

    def list_models(self) -> list[str]:
        data = self.transport.call_json("GET", f"{self.base}/api/tags", None, self.error)
        models = data.get("models") or []
        return [str(m.get("name") or m.get("model")) for m in models]

    def trained_context_length(self) -> int | None:
        """The model's trained context length as Ollama reports it, or None."""
        return self.model_context_lengths()[0]

    def model_context_lengths(self) -> tuple[int | None, int | None]:
        """(trained context_length, the Modelfile's num_ctx) from /api/show, None where
        it does not say. Raises ModelUnreachable when the server cannot be reached."""
        try:
            response = self.transport.request(
                "POST", f"{self.base}/api/show", {"model": self.endpoint.spec.model}
            )
            data = json_body(response, self.label)
        except ModelUnreachable:
            raise
        except ModelError:
            return None, None
        info = data.get("model_info") or {}
        lengths = [
            int(v) for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)
        ]
        return (lengths[0] if lengths else None), _num_ctx_parameter(data.get("parameters"))

    def close(self) -> None:
        self.transport.close()

    def _body(self, request: Request) -> dict[str, Any]:
        options: dict[str, Any] = {"num_ctx": self.num_ctx}
        if request.max_output_tokens:
            options["num_predict"] = request.max_output_tokens
        if request.temperature is not None:
            options["temperature"] = request.temperature
        return {
            "model": self.endpoint.spec.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": False,
            "options": options,
        }

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


def _num_ctx_parameter(parameters: Any) -> int | None:
    """``num_ctx`` from the Modelfile parameters text ("num_ctx 4096\nstop ...")."""
    for line in str(parameters or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    return None


def usage_from(data: dict[str, Any], prompt: str, content: str) -> Usage:
    # Ollama leaves prompt_eval_count out when the whole prompt came from its cache.
    prompt_tokens = data.get("prompt_eval_count")
    return Usage(
        input_tokens=int(prompt_tokens) if prompt_tokens is not None else estimate_tokens(prompt),
        output_tokens=int(data.get("eval_count") or estimate_tokens(content)),
    )
