# ruff: noqa: F811  (pytest fixtures imported from llama_fixtures are parameters here)
"""selfforge against a real llama.cpp server running SmolLM2-135M (``-c 2048``).

A 135M model cannot fix much; these tests check what it can show: every request carries
the generation settings and fits the window, a reply cut at the output limit is noticed,
junk never lands or becomes a task, and a server that stops ends the run with exit 1
naming the host. Run with ``pytest -m realmodel`` after ``python bench/local_model.py
setup`` (CI does both).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from llama_fixtures import WINDOW, Proxy, llama_server, proxy  # noqa: F401

from selfforge.roles.junk import task_junk

from conftest import CALC, TEST_CALC, directives, git, log_json, make_repo

pytestmark = pytest.mark.realmodel

ROLES_PLAN_PROPOSE_REFLECT = '\n[roles]\nenabled = ["plan", "propose", "reflect"]\n'


def run(repo: Path, proxy: Proxy, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "COLUMNS": "200",
        "SELFFORGE_CONFIG_DIR": tempfile.mkdtemp(prefix="selfforge-realmodel-config-"),
    }
    return subprocess.run(
        [sys.executable, "-m", "selfforge", "run", "--repo", str(repo),
         "--model", f"llamacpp:default@{proxy.url}/v1"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=timeout,
    )  # fmt: skip


def calc_project(root: Path, extra: str, cycles: int = 1) -> Path:
    text = directives(cycles=cycles, max_repairs=0, extra=extra)
    return make_repo(root, {"calc.py": CALC, "test_calc.py": TEST_CALC}, text)


def journal(repo: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        return list(db.execute(sql))


def test_requests_carry_generation_settings_and_fit_the_window(tmp_path, proxy) -> None:
    repo = calc_project(tmp_path / "calc", ROLES_PLAN_PROPOSE_REFLECT)
    head = git(repo, "rev-parse", "HEAD")
    proc = run(repo, proxy)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    chats = proxy.chats()
    assert chats, "no chat request reached the server"
    for chat in chats:
        assert chat.request["temperature"] == 0.2
        cap = chat.request["max_tokens"]
        assert 0 < cap <= WINDOW // 4
        assert chat.status == 200, chat.response  # never a context-size refusal
        usage = chat.response["usage"]
        assert usage["prompt_tokens"] + cap <= WINDOW  # counted by the server itself
        assert usage["completion_tokens"] <= cap
    # Junk never becomes a task, and nothing lands that the tests did not pass.
    for (text,) in journal(repo, "SELECT text FROM tasks WHERE status != 'dropped'"):
        assert task_junk(str(text)) is None, text
    assert not (repo / "path").exists()
    if git(repo, "rev-parse", "HEAD") != head:
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=repo)
        assert tests.returncode == 0


def test_a_reply_cut_at_the_output_limit_is_noticed(tmp_path, proxy) -> None:
    extra = '\n[model]\nmax_output_tokens = 8\n\n[roles]\nenabled = ["propose"]\n'
    repo = calc_project(tmp_path / "calc", extra)
    head = git(repo, "rev-parse", "HEAD")
    proc = run(repo, proxy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    [chat] = proxy.chats()
    assert chat.request["max_tokens"] == 8
    assert chat.response["choices"][0]["finish_reason"] == "length"
    [(note,)] = journal(repo, "SELECT note FROM model_calls WHERE role = 'propose'")
    assert str(note).startswith("cut at the 8-token output limit")
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "error" and "cut at" in str(attempt["reason"])
    assert git(repo, "rev-parse", "HEAD") == head


def test_a_server_that_stops_mid_run_ends_it_with_exit_1(tmp_path, proxy) -> None:
    # No planning: a tiny model's plan is junk, and a run with no task ends before a
    # second call. The first propose call is answered; the next finds the server gone.
    short = '\n[model]\nmax_output_tokens = 32\n\n[roles]\nenabled = ["propose", "reflect"]\n'
    repo = calc_project(tmp_path / "calc", short, cycles=3)
    answered = threading.Event()
    original = proxy.exchanges

    class StopAfterFirstChat(list):  # type: ignore[type-arg]
        def append(self, item: object) -> None:
            super().append(item)
            if str(getattr(item, "path", "")).endswith("/chat/completions"):
                answered.set()

    proxy.exchanges = StopAfterFirstChat(original)
    threading.Thread(target=lambda: answered.wait(600) and proxy.stop(), daemon=True).start()
    proc = run(repo, proxy, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert f"cannot reach {proxy.url.removeprefix('http://')} (connection refused)" in output


def test_a_server_that_is_not_running_stops_the_run_at_once(tmp_path, proxy) -> None:
    repo = calc_project(tmp_path / "calc", ROLES_PLAN_PROPOSE_REFLECT)
    proxy.stop()
    proc = run(repo, proxy, timeout=60)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in output
    assert "connection refused" in output and "start the model server" in output
