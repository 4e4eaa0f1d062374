# ruff: noqa: F811  (pytest fixtures imported from llama_fixtures are parameters here)
"""The exploring proposer driven by a real llama.cpp server running SmolLM2-135M
(``-c 2048``): whatever the tiny model answers, a few steps run without a crash, each
request fits the window, and every step is journaled. Run with ``pytest -m realmodel``
after ``python bench/local_model.py setup``."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from llama_fixtures import WINDOW, Proxy, llama_server, proxy  # noqa: F401

from conftest import CALC, TEST_CALC, directives, log_json, make_repo

pytestmark = pytest.mark.realmodel

EXTRA = """
[model]
proposer = "explore"
explore_steps = 3
explore_command_s = 10

[roles]
enabled = ["propose"]
"""


def test_a_tiny_model_drives_a_few_explore_steps(tmp_path: Path, proxy: Proxy) -> None:
    text = directives(cycles=1, max_repairs=0, extra=EXTRA)
    repo = make_repo(tmp_path / "calc", {"calc.py": CALC, "test_calc.py": TEST_CALC}, text)
    env = {
        **os.environ,
        "COLUMNS": "200",
        "SELFFORGE_CONFIG_DIR": tempfile.mkdtemp(prefix="selfforge-realmodel-config-"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "run", "--repo", str(repo),
         "--model", f"llamacpp:default@{proxy.url}/v1", "--task", "Fix add()"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=900,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    chats = proxy.chats()
    assert 1 <= len(chats) <= 3
    for chat in chats:
        assert chat.status == 200, chat.response  # never a context-size refusal
        usage = chat.response["usage"]
        assert usage["prompt_tokens"] + chat.request["max_tokens"] <= WINDOW
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        kinds = [k for (k,) in db.execute("SELECT kind FROM trajectory ORDER BY id")]
    assert kinds[0] == "task" and len(kinds) >= 3, kinds  # the task, a step, how it ended
    [attempt] = log_json(repo)
    assert attempt["outcome"] in ("accepted", "rejected", "no_edits"), attempt
