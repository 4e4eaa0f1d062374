"""The results channel is hostile input (#21.6): bounded in bytes, records and
connections, one reader thread, every record validated, only the authenticated plugin
heard; an attack is a rejection with a reason, never a crash. Through the CLI, candidate
code that writes to the channel from inside its own test run is rejected."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from selfforge.judge import channel as channel_module
from selfforge.judge import sandbox
from selfforge.judge.channel import MAX_CONNECTIONS, Channel

from conftest import cli, directives, log_json, make_repo


def _client(channel: Channel, token: str | None = None) -> socket.socket:
    client = socket.socket(socket.AF_UNIX)
    client.connect(channel.socket_path(False))
    if token is not None:
        client.sendall(json.dumps({"ev": "hello", "token": token}).encode() + b"\n")
    return client


def _token(channel: Channel) -> str:
    return os.pread(channel.secret_fd, 64, 0).decode()


def test_a_malformed_record_is_a_named_problem_not_a_crash(tmp_path: Path) -> None:
    channel = Channel()
    client = _client(channel, _token(channel))
    client.sendall(b'{"ev": "test", "id": "t", "outcome": "passed", "duration": "fast"}\n')
    client.close()
    channel.close()
    report = channel.report(tmp_path)
    assert report is not None and "invalid record" in str(report.channel_problem)
    assert "duration" in str(report.channel_problem)


def test_a_connection_without_the_secret_is_not_heard_and_is_named(tmp_path: Path) -> None:
    channel = Channel()
    forged = _client(channel)  # connects first, as code that runs before the plugin could
    forged.sendall(b'{"ev": "start", "rootdir": "/elsewhere", "pid": 1}\n')
    forged.close()
    real = _client(channel, _token(channel))  # control: the plugin's connection is heard
    real.sendall(b'{"ev": "start", "rootdir": "/x", "pid": 2}\n')
    real.close()
    channel.close()
    assert [r["pid"] for r in channel.records] == [2]
    assert channel.ignored == 1 and "forged" in str(channel.report(tmp_path).channel_problem)


def test_a_flood_is_capped_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channel_module, "MAX_BYTES", 2 * 2**20)  # the same rule, a smaller cap
    channel = Channel()
    client = _client(channel, _token(channel))
    line = json.dumps({"ev": "collected", "n": 1}).encode() + b"\n"
    with pytest.raises(OSError):  # the reader stops taking bytes at the cap and hangs up
        for _ in range(200_000):
            client.sendall(line * 64)
    client.close()
    channel.close()
    assert channel.bytes <= 2 * 2**20 + 65536
    assert "MiB on the results channel" in str(channel.report(tmp_path).channel_problem)


def test_many_connections_start_no_threads_and_are_capped(tmp_path: Path) -> None:
    channel = Channel()
    before = threading.active_count()
    clients = []
    for _ in range(MAX_CONNECTIONS + 40):
        try:
            clients.append(_client(channel))
        except OSError:
            break
    assert threading.active_count() <= before + 1  # one reader serves them all
    for client in clients:
        client.close()
    channel.close()
    assert "connections" in str(channel.report(tmp_path).channel_problem)


PATCH_WRITER = """
import json, os, socket

def _forge():
    path = "/tmp/.selfforge-judge/sock"
    if os.path.exists(path):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(json.dumps({"ev": "test", "id": "test_calc.py::test_sub", "when": "call",
                              "outcome": "passed", "duration": 0.0}).encode() + b"\\n")
        s.close()

_forge()
"""


@pytest.mark.skipif(
    sandbox.inside(),
    reason="inside a selfforge sandbox (selfforge judging its own suite) the inner run's "
    "checks share it, so the channel this attack finds is the outer judge's: it would "
    "forge the outer verdict, not test the inner one",
)
def test_candidate_code_that_writes_to_the_channel_is_rejected(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    calc = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
    tests = (
        "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    assert sub(5, 3) == 2\n"
    )
    repo = make_repo(tmp_path / "r", {"calc.py": calc, "test_calc.py": tests}, directives())
    breaks = (
        "calc.py\n<<<<<<< SEARCH\ndef sub(a, b):\n    return a - b\n=======\n"
        f"def sub(a, b):\n    return a * b\n{PATCH_WRITER}>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(repo), "--task", "Tidy sub()", "--model", script(propose=[breaks]))
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected"
    assert "cannot be trusted" in str(attempt["reason"]) and "forged" in str(attempt["reason"])
