"""Red team: a check's code must not reach a resident selfforge. A worker runs selfforge
commands with the caller's rights and no sandbox, so a candidate that could connect to
its socket would escape: every sandbox hides the resident's folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfforge.cli import launch
from selfforge.judge.sandbox import bwrap as sandbox

pytestmark = pytest.mark.skipif(not sandbox.probe().ok, reason="needs a working bubblewrap")


@pytest.fixture
def socket_path() -> Iterator[str]:
    folder = Path(tempfile.mkdtemp(prefix="sfr-", dir="/tmp"))
    shutil.rmtree(folder)
    env = {**os.environ, "SELFFORGE_RESIDENT": "1", "SELFFORGE_RESIDENT_DIR": str(folder)}
    run = [sys.executable, "-m", "selfforge", "resident"]
    subprocess.run([*run, "start", "--idle", "5m"], env=env, check=True, capture_output=True)
    path = subprocess.run(
        [sys.executable, "-c", "from selfforge.cli import launch; print(launch.socket_path())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    yield path
    subprocess.run([*run, "stop"], env=env, capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


def _probe(path: str) -> str:
    return (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"try:\n    s.connect({path!r})\nexcept OSError:\n    sys.exit(7)\n"
        "print('connected')\n"
    )


def test_control_the_socket_answers_outside_the_sandbox(socket_path: str) -> None:
    outside = subprocess.run([sys.executable, "-c", _probe(socket_path)], capture_output=True)
    assert outside.returncode == 0 and b"connected" in outside.stdout


def test_a_sandboxed_check_cannot_connect_to_the_resident(socket_path: str, tmp_path: Path) -> None:
    hidden = sandbox.hidden_places(tmp_path)
    shown = sandbox.runtime_roots([Path(sys.executable)], protect=hidden)  # the interpreter
    policy = sandbox.Policy(writable=(tmp_path,), hidden=hidden, readable=shown)
    argv = sandbox.bwrap_argv(policy, [sys.executable, "-c", _probe(socket_path)], tmp_path)
    inside = subprocess.run(argv, capture_output=True, text=True)
    assert inside.returncode == 7, inside.stdout + inside.stderr


def test_a_resident_folder_outside_tmp_is_hidden_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELFFORGE_RESIDENT_DIR", "/srv/selfforge-resident")
    assert Path(launch.resident_dir()) in sandbox.hidden_places(tmp_path)
