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

from selfforge.judge.runners import channel as channel_module
from selfforge.judge.runners.channel import MAX_CONNECTIONS, MAX_WHERE, Channel
from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox.command import CheckSpace, run_tests

from conftest import PYTEST, cli, directives, log_json, make_repo


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


SKIPS = {
    "calc.py": (
        "import unittest\n\nimport pytest\n\n\ndef skips():\n    pytest.skip('later')\n\n\n"
        "def xfails():\n    pytest.xfail('later')\n\n\n"
        "def raises():\n    raise ValueError('not yet')\n\n\n"
        "def skip_test():\n    raise unittest.SkipTest('later')\n"
    ),
    "conftest.py": (
        "import pytest\n\n\n@pytest.fixture\ndef network():\n    pytest.skip('offline')\n"
    ),
    "later.py": "import pytest\n\npytest.skip('later', allow_module_level=True)\n",
    "test_later.py": "import later\n\n\ndef test_later():\n    pass\n",
    "test_skips.py": (
        "import sys\nimport unittest\n\nimport pytest\n\nimport calc\n\n\n"
        "def test_code_skips():\n    calc.skips()\n\n\n"
        "def test_code_xfails():\n    calc.xfails()\n\n\n"
        "def test_code_raises_skiptest():\n    calc.skip_test()\n\n\n"
        "@pytest.mark.skipif(sys.maxsize > 0, reason='elsewhere')\n"
        "def test_marked():\n    pass\n\n\n"
        "@pytest.mark.xfail(reason='known bug')\n"
        "def test_expected_failure():\n    calc.raises()\n\n\n"
        "def test_fixture_skips(network):\n    pass\n\n\n"
        "def test_own_skip():\n    pytest.skip('by the test')\n\n\n"
        "class TestCase(unittest.TestCase):\n"
        "    def test_code_skips(self):\n        calc.skip_test()\n\n"
        "    def test_own_skip(self):\n        self.skipTest('by the test')\n"
    ),
}
SKIP_ORIGINS = {
    "test_skips.py::test_code_skips": ["test_skips.py", "calc.py"],
    "test_skips.py::test_code_xfails": ["test_skips.py", "calc.py"],
    "test_skips.py::test_code_raises_skiptest": ["test_skips.py", "calc.py"],
    "test_skips.py::test_marked": ["test_skips.py"],  # a mark: the test's file
    "test_skips.py::test_expected_failure": ["test_skips.py"],  # the mark's, not calc's
    "test_skips.py::test_fixture_skips": ["conftest.py"],
    "test_skips.py::test_own_skip": ["test_skips.py"],
    "test_skips.py::TestCase::test_code_skips": ["test_skips.py", "calc.py"],
    "test_skips.py::TestCase::test_own_skip": ["test_skips.py"],
}


@pytest.mark.parametrize("workers", ["", " -p xdist -n 2"], ids=["plain", "xdist"])
def test_each_skip_says_where_it_was_raised(tmp_path: Path, workers: str) -> None:
    """The project's files on each skip's stack, the raiser last (libraries and pytest
    left out): what the judge tells the base's own skips from the code's by. Through
    pytest-xdist's workers too (the report crosses a process)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name, text in SKIPS.items():
        (tree / name).write_text(text)
    space = CheckSpace(repo=tmp_path / "checkout")
    result, report = run_tests(f"{PYTEST}{workers}", tree, 120, space)
    assert report is not None, result.output
    assert report.skip_origins == SKIP_ORIGINS, result.output
    # a module skipped as it is collected (its tests never show): where, all the same
    assert report.skipped_modules == {"test_later.py": ["later.py"]}
    assert set(report.outcomes.values()) == {"skipped", "xfailed"}


def test_a_skip_origin_beyond_the_channel_s_bounds_is_a_named_problem(tmp_path: Path) -> None:
    channel = Channel()
    client = _client(channel, _token(channel))
    start = {"ev": "start", "rootdir": str(tmp_path)}
    test = {"ev": "test", "id": "t.py::a", "when": "call", "outcome": "skipped"}
    inside, outside = str(tmp_path / "pkg" / "calc.py"), "/usr/lib/python3/x.py"
    records = [start, {**test, "where": [outside, inside, "<string>"]}]
    records.append({**test, "id": "t.py::b", "where": ["/x"] * (MAX_WHERE + 1)})
    client.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    client.close()
    channel.close()
    report = channel.report(tmp_path)
    assert report is not None
    # relative to the tree; a file outside it is no code a change holds
    assert report.skip_origins == {"t.py::a": ["pkg/calc.py", "<string>"]}
    assert "where is not a list of at most 16 paths" in str(report.channel_problem)
