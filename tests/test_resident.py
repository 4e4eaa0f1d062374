"""A resident selfforge (`selfforge resident start`): commands handed to it behave as on
their own (output, exit code, working directory, environment, a closed pipe, Ctrl-C), it
never runs stale code, it serves no one it should not, and checks cannot reach it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, TEST_CALC, directives, git, make_repo

SRC = Path(__file__).resolve().parents[1] / "src"


class Resident:
    def __init__(self, folder: Path, extra_env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.env = {
            **os.environ,
            "SELFFORGE_RESIDENT": "1",
            "SELFFORGE_RESIDENT_DIR": str(folder),
            "COLUMNS": "200",
            **(extra_env or {}),
        }
        # A relative PYTHONPATH (`PYTHONPATH=src pytest`) is another import path in another
        # folder, which the resident rightly refuses: these tests change folders.
        if self.env.get("PYTHONPATH"):
            entries = self.env["PYTHONPATH"].split(os.pathsep)
            self.env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(e) for e in entries)

    def selfforge(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **kwargs.pop("env", {})}  # type: ignore[dict-item]
        return subprocess.run(
            [sys.executable, "-m", "selfforge", *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            **kwargs,  # type: ignore[arg-type]
        )

    def served(self) -> int:
        out = self.selfforge("resident", "status").stdout
        assert "command(s) served" in out, out
        return int(out.rsplit(",", 1)[1].split()[0])


@pytest.fixture
def residents() -> Iterator[Callable[..., Resident]]:
    """Makes a Resident with a socket folder of its own, not started; each is stopped and
    its folder removed after the test."""
    made: list[Resident] = []

    def make(extra_env: dict[str, str] | None = None) -> Resident:
        folder = Path(tempfile.mkdtemp(prefix="sfr-", dir="/tmp"))  # a socket path is short
        shutil.rmtree(folder)  # `resident start` makes it, private
        made.append(Resident(folder, extra_env))
        return made[-1]

    yield make
    for r in made:
        r.selfforge("resident", "stop")
        shutil.rmtree(r.folder, ignore_errors=True)


@pytest.fixture
def resident(residents: Callable[..., Resident]) -> Resident:
    r = residents()
    started = r.selfforge("resident", "start", "--idle", "5m")
    assert started.returncode == 0, started.stderr
    return r


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def test_a_command_behaves_through_the_resident_as_on_its_own(
    resident: Resident, repo: Path
) -> None:
    alone = resident.selfforge("status", "--repo", str(repo), env={"SELFFORGE_RESIDENT": "0"})
    assert resident.served() == 0
    handed = resident.selfforge("status", "--repo", str(repo))
    assert handed.returncode == alone.returncode == 0
    assert handed.stdout == alone.stdout and "repository:" in handed.stdout
    assert resident.served() == 1
    # its working directory, not the resident's
    here = resident.selfforge("status", cwd=repo)
    assert here.stdout.splitlines()[0].endswith(str(repo))
    # its environment: the help is wrapped to the caller's COLUMNS
    narrow = resident.selfforge("status", "--help", env={"COLUMNS": "40"})
    narrow_alone = resident.selfforge(
        "status", "--help", env={"COLUMNS": "40", "SELFFORGE_RESIDENT": "0"}
    )
    assert narrow.stdout == narrow_alone.stdout
    assert narrow.stdout != resident.selfforge("status", "--help").stdout  # COLUMNS=200
    # its exit code and usage line
    wrong = resident.selfforge("rnu")
    assert wrong.returncode == 2
    assert "Usage: python -m selfforge" in wrong.stderr and "No such command" in wrong.stderr
    assert resident.served() == 5
    # SELFFORGE_RESIDENT=0: on its own
    resident.selfforge("status", "--repo", str(repo), env={"SELFFORGE_RESIDENT": "0"})
    assert resident.served() == 5


def test_the_caller_s_terminal_settings_reach_consoles_made_at_import(
    resident: Resident, tmp_path: Path
) -> None:
    """Rich settles colours and width when a console is made, which for selfforge's
    consoles is at import, in the resident: a worker makes them again for its caller."""
    missing = str(tmp_path / "nowhere")
    colour = {"FORCE_COLOR": "1", "TERM": "xterm-256color"}
    alone = resident.selfforge(
        "status", "--repo", missing, env={**colour, "SELFFORGE_RESIDENT": "0"}
    )
    handed = resident.selfforge("status", "--repo", missing, env=colour)
    assert "\x1b[" in alone.stderr  # the control: the caller asked for colour
    assert handed.stderr == alone.stderr and handed.returncode == alone.returncode == 2
    plain = resident.selfforge("status", "--repo", missing, env={"NO_COLOR": "1"})
    assert "\x1b[" not in plain.stderr and "error:" in plain.stderr
    assert resident.served() == 2


def test_a_run_lands_through_the_resident_and_a_closed_pipe_does_not_stop_it(
    resident: Resident, repo: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "script.json"
    spec.write_text(json.dumps({"propose": [FIX_ADD]}))
    head = git(repo, "rev-parse", "HEAD")
    command = [sys.executable, "-m", "selfforge", "run", "--repo", str(repo)]
    proc = subprocess.Popen(
        [*command, "--model", f"script:{spec}"], stdout=subprocess.PIPE, env=resident.env
    )
    assert proc.stdout is not None
    proc.stdout.read(10)  # the reader goes away, as `| head -c 10` does
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert git(repo, "rev-parse", "HEAD") != head
    log = json.loads(resident.selfforge("log", "--json", "--repo", str(repo)).stdout)
    assert [a["outcome"] for a in log] == ["accepted"]
    assert resident.served() == 2


def _slow_repo(tmp_path: Path) -> Path:
    # the suite's own Python: a fresh machine may have python3 and no `python` on PATH
    slow = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    return make_repo(
        tmp_path / "slow", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(slow)
    )


def _wait_for_baseline(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if "baseline" in line:
            return
    raise AssertionError("the run never began its baseline")


@pytest.mark.parametrize("how", ["ctrl-c", "caller killed"])
def test_ctrl_c_or_a_killed_caller_interrupts_the_worker(
    resident: Resident, tmp_path: Path, how: str
) -> None:
    repo = _slow_repo(tmp_path)
    spec = tmp_path / "script.json"
    spec.write_text("{}")
    command = [sys.executable, "-m", "selfforge", "run", "--repo", str(repo), "--json"]
    proc = subprocess.Popen(
        [*command, "--model", f"script:{spec}"],
        stdout=subprocess.PIPE,
        text=True,
        env=resident.env,
    )
    _wait_for_baseline(proc)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
    code = proc.wait(timeout=30)
    assert code == (130 if how == "ctrl-c" else -signal.SIGKILL)
    for _ in range(100):  # the worker stops the run: the lock is released
        status = json.loads(resident.selfforge("status", "--json", "--repo", str(repo)).stdout)
        if not status["running"]:
            break
        time.sleep(0.2)
    assert not status["running"], status
    assert status["last_run"]["status"] == "interrupted"
    assert time.monotonic() - started < 30  # not the 60 s the tests would have taken


def test_a_changed_selfforge_is_never_served_stale(
    tmp_path: Path, residents: Callable[..., Resident]
) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "selfforge", copy / "selfforge", ignore=shutil.ignore_patterns("*.pyc"))
    r = residents({"PYTHONPATH": str(copy)})
    assert r.selfforge("resident", "start").returncode == 0
    assert "Run state, totals" in r.selfforge("status", "--help").stdout
    core = copy / "selfforge" / "cli" / "commands" / "history.py"
    core.write_text(core.read_text().replace("Run state, totals", "Changed: state, totals"))
    changed = r.selfforge("status", "--help").stdout
    assert "Changed: state, totals" in changed  # on its own, while the resident restarts
    for _ in range(100):
        if r.selfforge("resident", "status").returncode == 0:
            break
        time.sleep(0.1)
    before = r.served()
    assert "Changed: state, totals" in r.selfforge("status", "--help").stdout
    assert r.served() == before + 1  # the restarted resident serves the new code


def test_no_hand_over_through_a_folder_others_can_enter(resident: Resident, repo: Path) -> None:
    os.chmod(resident.folder, 0o755)
    try:
        gone = resident.selfforge("resident", "status")
        assert gone.returncode == 1 and "no resident selfforge is running" in gone.stdout
        alone = resident.selfforge("status", "--repo", str(repo))
        assert alone.returncode == 0 and "repository:" in alone.stdout
    finally:
        os.chmod(resident.folder, 0o700)
    assert resident.served() == 0


def test_another_import_path_is_not_served(resident: Resident, repo: Path, tmp_path: Path) -> None:
    other = resident.selfforge("status", "--repo", str(repo), env={"PYTHONPATH": str(tmp_path)})
    assert other.returncode == 0 and "repository:" in other.stdout
    assert resident.served() == 0


def test_a_new_module_restarts_the_resident_and_compiled_files_do_not(tmp_path: Path) -> None:
    from selfforge.cli import resident as server

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("A = 1\n")
    seen = server.stamp([str(package), str(package / "a.py")])
    (package / "__pycache__").mkdir()  # what Python's first import there does
    (package / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    assert server.stamp(seen) == seen
    (package / "b.py").write_text("B = 2\n")
    assert server.stamp(seen) != seen


def test_every_module_level_console_is_one_a_worker_can_remake() -> None:
    """A console made at import with Console(...) would keep the resident's terminal."""
    import re

    made_here = [
        str(path.relative_to(SRC))
        for path in (SRC / "selfforge").rglob("*.py")
        if path.name != "consoles.py"
        and re.search(r"^\w+\s*(:[^=]+)?=\s*Console\(", path.read_text(), re.M)
    ]
    assert made_here == []


def test_a_resident_leaves_no_socket_when_it_stops_idles_out_or_was_killed(
    residents: Callable[..., Resident], repo: Path
) -> None:
    r = residents()
    folder = r.folder
    assert r.selfforge("resident", "start").returncode == 0
    assert r.selfforge("resident", "stop").stdout.startswith("resident selfforge stopped")
    for _ in range(50):
        if not list(folder.glob("*.sock")):
            break
        time.sleep(0.1)
    assert list(folder.glob("*.sock")) == []
    assert r.selfforge("resident", "start", "--idle", "1s").returncode == 0
    time.sleep(2.5)
    assert list(folder.glob("*.sock")) == []  # idled out
    # killed: the socket stays, nothing answers it, and commands run on their own
    assert r.selfforge("resident", "start").returncode == 0
    pid = int(r.selfforge("resident", "status").stdout.split("pid ")[1].split(",")[0])
    os.kill(pid, signal.SIGKILL)
    alone = r.selfforge("status", "--repo", str(repo))
    assert alone.returncode == 0 and "repository:" in alone.stdout
    assert r.selfforge("resident", "start").returncode == 0  # over the dead one's socket
    assert r.served() == 0
