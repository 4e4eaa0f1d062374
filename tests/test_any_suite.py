"""Any suite can be judged (#33): durations are data. A test that freezes or mocks the
clock makes pytest report durations of ±1e9 s (or NaN); the judge records them as
unknown and judges the suite, never "could not judge". Through the CLI, on real repos
whose tests use freezegun, time-machine or a patched ``time.time``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from selfforge.judge.runners.channel import Channel

from conftest import CALC, directives, git, make_repo

FIXED = CALC.replace("return a - b", "return a + b", 1)

# Each suite holds the clock still from a test's setup to its teardown, as the
# `freezer` fixtures do: with freezegun pytest measures the setup at about +1.3e9 s and
# the teardown at -1.3e9 s (freezegun fakes perf_counter too); the mocked suite makes
# pytest's own clock say NaN, infinity and -1e12 besides patching time.time.
FREEZEGUN = """\
import pytest
from freezegun import freeze_time

from calc import add, mul, sub


@pytest.fixture(autouse=True)
def frozen():
    with freeze_time("2012-01-14"):
        yield


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_mul():
    assert mul(4, 3) == 12
"""

TIME_MACHINE = """\
import datetime

import pytest
import time_machine

from calc import add, mul, sub


@pytest.fixture(autouse=True)
def travelled():
    when = datetime.datetime(2012, 1, 14, tzinfo=datetime.timezone.utc)
    with time_machine.travel(when, tick=False):
        yield


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_mul():
    assert mul(4, 3) == 12
"""

MOCKED_TIME = """\
import itertools
import time
from unittest import mock

import pytest

from calc import add, mul, sub

CLOCK = itertools.cycle([float("nan"), float("inf"), -1.0e12, 5.0])


@pytest.fixture(autouse=True)
def mocked_clock():
    with mock.patch("time.time", return_value=0.0), mock.patch(
        "_pytest.timing.perf_counter", side_effect=lambda: next(CLOCK)
    ):
        yield


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_mul():
    assert mul(4, 3) == 12


def test_the_clock_is_mocked():
    assert time.time() == 0.0
"""


def _check(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def _commit(repo: Path, message: str, text: str) -> None:
    (repo / "calc.py").write_text(text)
    git(repo, "commit", "-qam", message)


@pytest.mark.parametrize(
    ("library", "tests"),
    [("freezegun", FREEZEGUN), ("time_machine", TIME_MACHINE), (None, MOCKED_TIME)],
    ids=["freezegun", "time-machine", "mock-time"],
)
def test_a_suite_that_controls_the_clock_is_judged(
    tmp_path: Path, library: str | None, tests: str
) -> None:
    if library is not None:
        pytest.importorskip(library, reason=f"{library} is in the dev extra; install it")
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": tests}, directives())
    _commit(repo, "Fix add()", FIXED)
    accepted = _check(repo, "HEAD", "--json")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert json.loads(accepted.stdout)["verdict"] == "accepted"

    _commit(repo, "Break mul()", FIXED.replace("a * b", "a + b"))
    rejected = _check(repo, "HEAD")
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    assert "test_mul" in rejected.stdout


def test_an_absurd_duration_is_unknown_and_the_channel_keeps_its_bounds(tmp_path: Path) -> None:
    """Through the channel itself: a moved clock leaves the test out of ``durations``
    (unknown, not years and not free); a value no plugin sends is still a problem."""
    channel = Channel()
    client = socket.socket(socket.AF_UNIX)
    client.connect(channel.socket_path(False))
    token = os.pread(channel.secret_fd, 64, 0).decode()
    records = [{"ev": "hello", "token": token}, {"ev": "start", "rootdir": str(tmp_path)}]
    phases = {"frozen": (1.3e9, 0.0, -1.3e9), "nan": (0.1, float("nan"), 0.1)}
    phases |= {"huge": (0.1, 10**400, 0.1), "real": (0.25, 0.5, 0.25)}
    for test, durations in phases.items():
        for when, secs in zip(("setup", "call", "teardown"), durations, strict=True):
            records.append({"ev": "test", "id": f"t.py::{test}", "when": when,
                            "outcome": "passed", "duration": secs})  # fmt: skip
    client.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    client.close()
    channel.close()
    report = channel.report(tmp_path)
    assert report is not None and report.channel_problem is None
    assert report.passed == {f"t.py::{t}" for t in phases}
    # setup + call: a passing teardown after the call adds nothing (as before)
    assert report.durations == {"t.py::real": 0.75}
