"""Fixtures for the realmodel tests: a real llama.cpp server with SmolLM2-135M on
loopback, behind a recording proxy.

The server and model come from ``bench/local_model.py setup`` (cached outside the
clone). The proxy forwards every request to the server unchanged and keeps both bodies,
so tests see exactly what selfforge sent and what the server answered.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 2048


def _load_setup() -> Any:
    spec = importlib.util.spec_from_file_location("local_model", ROOT / "bench" / "local_model.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


local_model = _load_setup()


@dataclass
class Exchange:
    method: str
    path: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any]


@dataclass
class Proxy:
    upstream: str
    exchanges: list[Exchange] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def chats(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.path.endswith("/chat/completions")]

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def start_proxy(upstream: str) -> Proxy:
    proxy = Proxy(upstream)
    client = httpx.Client(timeout=600)

    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            answer = client.request(
                self.command,
                proxy.upstream + self.path,
                content=raw,
                headers={"Content-Type": "application/json"} if raw else None,
            )
            proxy.exchanges.append(
                Exchange(
                    self.command, self.path, _json(raw), answer.status_code, _json(answer.content)
                )
            )
            self.send_response(answer.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = _forward

        def log_message(self, *args: object) -> None:
            pass

    proxy.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=proxy.server.serve_forever, daemon=True).start()
    return proxy


def _json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a running llama-server (``-c 2048 --temp 0 --seed 1``)."""
    if not (local_model.server_path().exists() and local_model.model_path().exists()):
        if os.environ.get("CI"):
            pytest.fail("llama-server or the model is missing: run bench/local_model.py setup")
        pytest.skip("no cached llama-server: run `python bench/local_model.py setup` first")
    port = local_model.free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    proc = local_model.start_server(port, ctx=WINDOW, log=log)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # still generating for a client that is gone
            proc.kill()
            proc.wait()


@pytest.fixture
def proxy(llama_server: str) -> Iterator[Proxy]:
    recording = start_proxy(llama_server)
    yield recording
    recording.stop()
