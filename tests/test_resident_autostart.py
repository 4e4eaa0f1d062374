"""A resident started on first use (issue 33.4): after a quick command that ran on its
own (`check`, `log`, …), a resident is started in the background, so the next command
is handed over and starts in milliseconds. It holds none of the command's descriptors
(a caller reading the output to its end is not kept waiting), two first commands at once
start one, and none is started on CI, for long commands, or when the user said not to."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from selfforge.cli.launch import starts_resident

from conftest import CALC, TEST_CALC, directives, make_repo


@pytest.fixture
def folder() -> Iterator[Path]:
    """A socket folder of this test's own; every resident serving it is stopped after."""
    made = Path(tempfile.mkdtemp(prefix="sfa-", dir="/tmp"))  # a socket path is short
    shutil.rmtree(made)
    yield made
    for pid in residents_of(made):
        os.kill(pid, signal.SIGTERM)
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def environment(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SELFFORGE_RESIDENT", "CI")}
    if env.get("PYTHONPATH"):  # the resident serves one import path: make it absolute
        entries = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(e) for e in entries)
    return {**env, "SELFFORGE_RESIDENT_DIR": str(folder), "COLUMNS": "200", **extra}


def selfforge(folder: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfforge", *args],
        capture_output=True,  # read to its end: a resident holding the pipe would hang this
        text=True,
        env=environment(folder, **extra),
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def residents_of(folder: Path) -> list[int]:
    """Live `selfforge resident serve` processes for ``folder`` (a zombie has no command)."""
    pids = []
    mark = f"SELFFORGE_RESIDENT_DIR={folder}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"resident" in argv and b"serve" in argv and mark in env:
            pids.append(int(entry))
    return pids


def until(condition: Callable[[], object], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.1)


def answers(folder: Path) -> bool:
    return selfforge(folder, "resident", "status", SELFFORGE_RESIDENT="1").returncode == 0


def served(folder: Path) -> int:
    out = selfforge(folder, "resident", "status", SELFFORGE_RESIDENT="1").stdout
    return int(out.rsplit(",", 1)[1].split()[0])


def test_a_quick_command_starts_a_resident_and_the_next_one_is_handed_to_it(
    folder: Path, repo: Path
) -> None:
    started = time.monotonic()
    first = selfforge(folder, "status", "--repo", str(repo))
    took = time.monotonic() - started
    assert first.returncode == 0, first.stderr
    assert took < 60, took  # its output read to the end: the resident does not hold it
    until(lambda: answers(folder))
    assert served(folder) == 0
    second = selfforge(folder, "status", "--repo", str(repo))
    assert second.returncode == 0 and "repository:" in second.stdout, second.stderr
    assert served(folder) == 1  # handed over, not run on its own
    assert len(residents_of(folder)) == 1
    # It keeps no folder busy: its working directory is the root, not the repository.
    (pid,) = residents_of(folder)
    assert os.readlink(f"/proc/{pid}/cwd") == "/"


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("status",), {"CI": "true"}),  # a one-shot job would pay the imports for nothing
        (("status",), {"SELFFORGE_RESIDENT": "1"}),  # use one that runs, never start one
        (("status",), {"SELFFORGE_RESIDENT": "0"}),
        (("status", "--help"), {}),
        (("--version",), {}),
        (("export", "--format", "sft"), {}),  # not a command run often
    ],
    ids=["ci", "resident-1", "resident-0", "help", "version", "long-command"],
)
def test_no_resident_is_started_where_it_should_not_be(
    folder: Path, repo: Path, args: tuple[str, ...], extra: dict[str, str]
) -> None:
    repo_args = () if args == ("--version",) else ("--repo", str(repo))
    done = selfforge(folder, *args, *repo_args, **extra)
    assert done.returncode in (0, 1, 2), done.stderr
    # A started resident is a process before the command that started it exits.
    assert residents_of(folder) == []
    assert not answers(folder)


def test_auto_starts_one_on_ci_too(folder: Path, repo: Path) -> None:
    done = selfforge(folder, "status", "--repo", str(repo), CI="true", SELFFORGE_RESIDENT="auto")
    assert done.returncode == 0, done.stderr
    until(lambda: answers(folder))


def test_first_commands_at_once_start_one_resident(folder: Path, repo: Path) -> None:
    env = environment(folder)
    many = [
        subprocess.Popen(
            [sys.executable, "-m", "selfforge", "status", "--repo", str(repo)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for proc in many:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
    until(lambda: answers(folder))
    # The others find the lock held and leave before loading anything.
    until(lambda: len(residents_of(folder)) == 1, seconds=60)
    assert selfforge(folder, "status", "--repo", str(repo)).returncode == 0
    assert served(folder) == 1


def test_a_folder_others_can_enter_starts_nothing(folder: Path, repo: Path) -> None:
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    done = selfforge(folder, "status", "--repo", str(repo))
    assert done.returncode == 0, done.stderr
    assert residents_of(folder) == []


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["check", "HEAD"], {}, True),
        (["--debug", "show", "last"], {}, True),
        (["measure", "main..topic"], {}, True),  # a small comparison's start-up (issue 42)
        (["check"], {"CI": "1"}, False),
        (["check"], {"CI": "0"}, True),
        (["check"], {"CI": "true", "SELFFORGE_RESIDENT": "auto"}, True),
        (["check"], {"SELFFORGE_RESIDENT": "1"}, False),
        (["run", "--task", "x"], {}, False),
        (["resident", "status"], {}, False),
        (["check", "-h"], {}, False),
        ([], {}, False),
    ],
)
def test_which_commands_start_a_resident(argv: list[str], env: dict, expected: bool) -> None:
    assert starts_resident(argv, env) is expected


def test_a_command_while_a_resident_is_starting_starts_no_other(
    folder: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is held from before a starting resident's imports: a command that finds
    it held (the first command's resident still loading) spawns nothing."""
    import fcntl

    from selfforge.cli import launch

    folder.mkdir(mode=0o700)
    monkeypatch.setenv("SELFFORGE_RESIDENT_DIR", str(folder))
    fd = os.open(launch.lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as resident.claim holds it
        done = selfforge(folder, "status", "--repo", str(repo))
        assert done.returncode == 0, done.stderr
        assert residents_of(folder) == []  # none spawned, not even one that would leave
    finally:
        os.close(fd)
    # Control: with the lock free, the same command starts one.
    assert selfforge(folder, "status", "--repo", str(repo)).returncode == 0
    until(lambda: answers(folder))


def test_doctor_says_whether_a_resident_runs_and_whether_one_will_start(
    folder: Path, repo: Path
) -> None:
    on_ci = selfforge(folder, "doctor", "--repo", str(repo), CI="true")
    assert "resident: not running; not started on CI" in on_ci.stdout, on_ci.stdout
    told = selfforge(folder, "doctor", "--repo", str(repo), SELFFORGE_RESIDENT="1")
    assert "resident: not running; SELFFORGE_RESIDENT=1 uses one but starts none" in told.stdout
    assert selfforge(folder, "status", "--repo", str(repo)).returncode == 0
    until(lambda: answers(folder))
    running = selfforge(folder, "doctor", "--repo", str(repo))
    assert "resident: running (pid" in running.stdout, running.stdout
