"""bench/redteam.py, the red team CI runs: a class listed as defended that holds is a
"defended" row and exit 0; an attack whose defence has not landed is reported "open" and
fails the run only once the class is listed as defended."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
# An attack class with no defence yet: the attack gets through, its control works.
OPEN_ATTACK = """
def test_attack_reads_the_planted_file(tmp_path):
    planted = tmp_path / "planted"
    planted.write_text("secret")
    assert not planted.read_text(), "the attack read the planted file"


def test_control_the_file_is_there(tmp_path):
    (tmp_path / "planted").write_text("secret")
"""


def _redteam(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / "bench" / "redteam.py"), *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _row(stdout: str, label: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(label))


def test_a_defended_class_runs_its_attacks_and_controls() -> None:
    proc = _redteam("--only", "directives written")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = _row(proc.stdout, "directives written by the candidate").split()
    assert row[-1] == "defended"
    refused, attacks = row[-3].split("/")
    worked, controls = row[-2].split("/")
    assert refused == attacks and int(attacks) > 0
    assert worked == controls and int(controls) > 0


def test_an_open_attack_fails_the_run_only_when_listed_as_defended(tmp_path: Path) -> None:
    module = tmp_path / "test_open_attack.py"
    module.write_text(OPEN_ATTACK)
    spec = f"a planted file read={module}"
    proc = _redteam("--class", spec, "--only", "planted file")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _row(proc.stdout, "a planted file read").split()[-3:] == ["0/1", "1/1", "open"]
    listed = _redteam("--class", spec, "--only", "planted file", "--expect", "a planted file read")
    assert listed.returncode == 1, listed.stdout
    assert _row(listed.stdout, "a planted file read").split()[-1] == "BROKEN"
    assert "test_attack_reads_the_planted_file" in listed.stdout


def test_rows_read_from_a_whole_runs_junit_match_a_run_of_their_own(tmp_path: Path) -> None:
    """CI's suite ran every attack module already: the table is read from its junit XML
    (`--from-junit`), a module with no results there is a failure, never a pass."""
    (tmp_path / "test_open_attack.py").write_text(OPEN_ATTACK)
    junit = tmp_path / "whole.xml"
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junit-xml={junit}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
    )
    spec = "a planted file read=test_open_attack.py"
    proc = _redteam("--class", spec, "--only", "planted file", "--from-junit", str(junit))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _row(proc.stdout, "a planted file read").split()[-3:] == ["0/1", "1/1", "open"]
    missing = "a class never run=tests/test_not_in_that_run.py"
    listed = _redteam(
        "--class", missing, "--only", "never run", "--expect", "a class never run",
        "--from-junit", str(junit),
    )  # fmt: skip
    assert listed.returncode == 1, listed.stdout
    assert "tests/test_not_in_that_run.py: no results" in listed.stdout
    gone = _redteam("--from-junit", str(tmp_path / "removed" / ".." / "whole.xml"))
    assert gone.returncode == 2 and "no such file" in gone.stderr, gone.stdout + gone.stderr
