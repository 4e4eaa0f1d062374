"""Every check gets fresh, empty /tmp, /var/tmp, /run and /dev/shm. An interpreter or
toolchain the check needs that lives in one of them (a checkout and its venv cloned
under /var/tmp, as CI jobs and the README's quick start may be) is shown again, read-only:
the demo of a fresh clone there could not run its own test command."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import cli, directives, git, make_repo

TEST = (
    "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)


@pytest.fixture
def venv_in_var_tmp() -> Path:
    place = Path(tempfile.mkdtemp(prefix="selfforge-venv-", dir="/var/tmp"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(place)], check=True)
    yield place
    shutil.rmtree(place, ignore_errors=True)


@pytest.mark.skipif(not Path("/var/tmp").is_dir(), reason="needs /var/tmp")
def test_a_venv_under_var_tmp_runs_the_checks(tmp_path: Path, venv_in_var_tmp: Path) -> None:
    python = venv_in_var_tmp / "bin" / "python"
    files = {"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": TEST}
    repo = make_repo(tmp_path / "r", files, directives(f"{python} -m unittest -v"))
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "Fix add()")
    proc = cli("check", "--repo", str(repo))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "accepted" in proc.stdout
