"""The smoke run's sandbox probe (#21.9): a candidate selfforge is asked, with its own
code, what sandbox it would build; the installed judge refuses one that dropped a part of
it. The control is a real copy of selfforge with its capability drop removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from selfforge.judge.sandbox import probe as sandbox_probe

from conftest import make_repo

SRC = Path(__file__).parents[1] / "src"


def _probe(tmp_path: Path, src: Path) -> str:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    out = tmp_path / "probe.json"
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = sandbox_probe.command(Path(sys.executable), out, repo)
    subprocess.run(["sh", "-c", command], env=env, check=True, capture_output=True)
    return sandbox_probe.verify(out).reason


def test_the_running_code_builds_the_whole_sandbox(tmp_path: Path) -> None:
    assert _probe(tmp_path, SRC) == "all gates passed"


def test_a_candidate_that_dropped_the_capability_drop_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "candidate-src"
    shutil.copytree(SRC / "selfforge", copy / "selfforge")
    sandbox_py = copy / "selfforge" / "judge" / "sandbox" / "bwrap.py"
    text = sandbox_py.read_text()
    weakened = text.replace('args = ["--unshare-user", "--cap-drop", "ALL"]', "args = []")
    assert weakened != text
    sandbox_py.write_text(weakened)
    reason = _probe(tmp_path, copy)
    assert "weakens the sandbox" in reason and "--cap-drop ALL" in reason
    assert "--unshare-user" in reason
