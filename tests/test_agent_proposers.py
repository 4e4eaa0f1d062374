"""Outside coding agents as the proposer (`run --agent NAME`): real mini-swe-agent and
aider processes, run in the proposer sandbox against a local OpenAI-compatible server
that replays a scripted trajectory; the judge then lands their fix or refuses their test
edit. A `cmd:` agent shows what the proposer sandbox lets an agent reach."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from conftest import CALC, TEST_CALC, cli, directives, git, log_json, make_repo

AGENTS = Path(os.environ.get("SELFFORGE_AGENTS", Path.home() / ".cache/selfforge-ci/agents"))
TASK = "Fix add() so test_add passes"


def openai_replay(server: HTTPServer, replies: list[str]) -> list[dict]:
    """An OpenAI chat-completions server answering each request with the next reply;
    returns the list the request bodies are put in."""
    seen: list[dict] = []

    def answer(request: Request) -> Response:
        body = json.loads(request.data or b"{}")
        seen.append(body)
        text = replies.pop(0) if replies else "I am done."
        reply = {
            "id": f"chatcmpl-{len(seen)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
        }
        return Response(json.dumps(reply), content_type="application/json")

    server.expect_request(re.compile(".*/chat/completions"), method="POST").respond_with_handler(
        answer
    )
    return seen


def agent_repo(tmp_path: Path, server: HTTPServer, agent: str) -> Path:
    spec = f"openai:test-model@{server.url_for('/v1')}"
    extra = f'\n[model]\nagent = "{agent}"\nagent_model = "{spec}"\nagent_seconds = 300\n'
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC}
    return make_repo(tmp_path / "repo", files, directives(extra=extra))


def run_agent(repo: Path, script, bin_dir: Path, *more: str) -> None:
    spec = script(review=["APPROVE: fine"])
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    cli("run", "--repo", str(repo), "--model", spec, "--task", TASK, *more, check=True, env=env)


def steps(repo: Path) -> list[dict]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM trajectory ORDER BY id")]


def agent_calls(repo: Path) -> list[dict]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM model_calls WHERE role = 'agent'")]


# --- mini-swe-agent ----------------------------------------------------------------------

needs_mini = pytest.mark.skipif(
    importlib.util.find_spec("minisweagent") is None,
    reason="mini-swe-agent is not installed (pip install -e '.[agents]')",
)


def mini(command: str) -> str:
    return f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```\n"


MINI_SUBMIT = mini("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


@pytest.mark.slow
@needs_mini
def test_mini_swe_agent_fixes_the_bug_and_the_judge_lands_it(
    tmp_path: Path, httpserver: HTTPServer, script
) -> None:
    seen = openai_replay(
        httpserver,
        [mini("grep -n 'a - b' calc.py"), mini("sed -i '2s/a - b/a + b/' calc.py"), MINI_SUBMIT],
    )
    repo = agent_repo(tmp_path, httpserver, "mini")
    run_agent(repo, script, Path(sys.executable).parent)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    assert "return a + b" in (repo / "calc.py").read_text()
    assert git(repo, "status", "--porcelain") == ""  # its trajectory file went elsewhere
    assert len(seen) == 3 and seen[0]["model"] == "test-model"
    assert TASK in json.dumps(seen[0]["messages"])
    # Its own trajectory (the .traj.json) is journaled step by step, then its transcript.
    rows = steps(repo)
    assert [r["kind"] for r in rows] == ["task", "agent", "agent", "agent", "transcript"]
    assert "grep -n 'a - b' calc.py" in rows[1]["action"]
    assert "1:def add(a, b):" not in rows[1]["output"] and "2:    return a - b" in rows[1]["output"]
    assert rows[-1]["exit_code"] == 0 and "mini" in rows[-1]["action"]
    [call] = agent_calls(repo)
    assert call["model"] == "agent:mini" and TASK in call["prompt"]


@pytest.mark.slow
@needs_mini
def test_mini_swe_agent_editing_the_test_is_refused(
    tmp_path: Path, httpserver: HTTPServer, script
) -> None:
    cheat = "sed -i 's/assert add(2, 3) == 5/assert add(2, 3) == -1/' test_calc.py"
    openai_replay(httpserver, [mini(cheat), MINI_SUBMIT])
    repo = agent_repo(tmp_path, httpserver, "mini")
    run_agent(repo, script, Path(sys.executable).parent)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected", attempt
    assert "test_calc.py" in attempt["reason"]
    assert "== 5" in (repo / "test_calc.py").read_text()  # nothing landed


# --- aider ---------------------------------------------------------------------------------


def aider_bin() -> Path | None:
    """aider pins every dependency it has, so it lives in a venv of its own (as pipx or
    aider-install would put it): SELFFORGE_AGENTS/aider, or PATH."""
    own = AGENTS / "aider" / "bin" / "aider"
    if own.exists():
        return own.parent
    found = shutil.which("aider")
    return Path(found).parent if found else None


needs_aider = pytest.mark.skipif(
    aider_bin() is None,
    reason=f"aider is not installed (.ci/run puts it in {AGENTS}/aider: python -m venv, "
    "pip install aider-chat)",
)


def aider_edit(path: str, search: str, replace: str) -> str:
    block = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"
    return f"Here is the edit.\n\n{path}\n```python\n{block}\n```\n"


@pytest.mark.slow
@needs_aider
def test_aider_fixes_the_bug_and_the_judge_lands_it(
    tmp_path: Path, httpserver: HTTPServer, script
) -> None:
    add = "def add(a, b):\n    return a {} b"
    fix = aider_edit("calc.py", add.format("-"), add.format("+"))
    # aider adds a file an edit names to its chat, and asks again: the edit comes twice.
    seen = openai_replay(httpserver, [fix, fix])
    repo = agent_repo(tmp_path, httpserver, "aider")
    bin_dir = aider_bin()
    assert bin_dir is not None
    run_agent(repo, script, bin_dir)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    assert "return a + b" in (repo / "calc.py").read_text()
    assert git(repo, "status", "--porcelain") == ""  # no .aider* files, no .gitignore edit
    assert TASK in json.dumps(seen[0]["messages"])
    kinds = [r["kind"] for r in steps(repo)]
    assert kinds[0] == "task" and kinds[-1] == "transcript" and "agent" in kinds
    # Its chat history (.aider.chat.history.md, written outside the worktree) is journaled.
    history = "\n".join(r["output"] for r in steps(repo) if r["kind"] == "agent")
    assert TASK in history and "return a + b" in history
    [call] = agent_calls(repo)
    assert call["input_tokens"] == 2000 and call["output_tokens"] == 100  # its two calls


@pytest.mark.slow
@needs_aider
def test_aider_editing_the_test_is_refused(tmp_path: Path, httpserver: HTTPServer, script) -> None:
    cheat = aider_edit("test_calc.py", "    assert add(2, 3) == 5", "    assert add(2, 3) == -1")
    openai_replay(httpserver, [cheat, cheat])
    repo = agent_repo(tmp_path, httpserver, "aider")
    bin_dir = aider_bin()
    assert bin_dir is not None
    run_agent(repo, script, bin_dir)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected", attempt
    assert "test_calc.py" in attempt["reason"]
    assert "== 5" in (repo / "test_calc.py").read_text()
