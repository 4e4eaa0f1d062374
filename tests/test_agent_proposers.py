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
    assert rows[-1]["exit_code"] == 0 and rows[-1]["output"].startswith("$ ")
    assert "mini -y --exit-immediately" in rows[-1]["output"].splitlines()[0]
    [call] = agent_calls(repo)
    assert call["model"] == "agent:mini" and TASK in call["prompt"]
    brief = cli("show", "last", "--repo", str(repo), "--brief", check=True).stdout
    assert "agent    sed -i '2s/a - b/a + b/' calc.py" in brief
    # Its steps are a multi-turn trace: each reply, then what it saw.
    out = cli("export", "--format", "traces", "--repo", str(repo), check=True).stdout
    [trace] = [json.loads(line) for line in out.splitlines()]
    roles = [m["role"] for m in trace["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert "mswea_bash_command\ngrep -n" in trace["messages"][2]["content"]
    assert trace["metadata"]["steps"] == 3 and trace["metadata"]["outcome"] == "accepted"


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
    assert kinds[0] == "task" and kinds[-1] == "transcript" and "log" in kinds
    # Its chat history (.aider.chat.history.md, written outside the worktree) is journaled.
    history = "\n".join(r["output"] for r in steps(repo) if r["kind"] == "log")
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


# --- what the proposer sandbox lets an agent reach ----------------------------------------


def test_a_cmd_agent_reaches_its_model_and_the_worktree_and_nothing_after_the_base(
    tmp_path: Path, httpserver: HTTPServer, script
) -> None:
    httpserver.expect_request("/ping").respond_with_data("pong")
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC}
    repo = make_repo(tmp_path / "repo", files, directives())
    git(repo, "switch", "-q", "-c", "future")
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b", 1))
    git(repo, "commit", "-q", "-am", "the gold fix")
    gold = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "-")
    url = httpserver.url_for("/ping")
    ping = f"import urllib.request; print('NET', urllib.request.urlopen('{url}').read())"
    agent = (
        'cmd:echo "TASK $(head -1 {task_file})"; echo "HOME [$(ls -A "$HOME")]";'
        " git log --all --oneline | wc -l | sed 's/^/COMMITS /';"
        f" git cat-file -t {gold} || echo NO-GOLD;"
        f' ls {repo} > /dev/null 2>&1 || echo NO-CHECKOUT; {sys.executable} -c "{ping}";'
        " sed -i '2s/a - b/a + b/' calc.py"
    )
    cli(
        "run",
        "--repo",
        str(repo),
        "--model",
        script(),
        "--task",
        TASK,
        "--agent",
        agent,
        check=True,
    )

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    [transcript] = [s for s in steps(repo) if s["kind"] == "transcript"]
    seen = transcript["output"]
    assert f"TASK Task: {TASK}" in seen
    assert "HOME []" in seen  # a home of its own, empty: nothing of the user's
    assert "COMMITS 1" in seen and "NO-GOLD" in seen  # the past only
    assert "NO-CHECKOUT" in seen
    assert "NET b'pong'" in seen  # the network is on: it can call its model


def test_the_agents_configuration_is_shown_read_only_or_as_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfforge.judge.sandbox.command import CheckSpace, run_command
    from selfforge.propose.agents import ADAPTERS
    from selfforge.propose.external import agent_binds

    home = tmp_path / "home"
    for rel, text in {
        ".config/mini-swe-agent/.env": "OPENAI_API_KEY=sk-mini-own-0123456789abcdef\n",
        ".claude/settings.json": "{}\n",
        ".ssh/id_rsa": "PRIVATE\n",
    }.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    monkeypatch.setenv("HOME", str(home))
    tree, io = tmp_path / "tree", tmp_path / "io"
    tree.mkdir(), io.mkdir()
    space = CheckSpace(repo=tmp_path / "nothing", network=True)

    def run(name: str, command: str) -> str:
        binds = agent_binds(ADAPTERS[name], None, io)
        return run_command(command, tree, 30, space, binds=binds).output

    seen = run("mini", 'echo "HOME [$(ls -A "$HOME")] [$(ls -A "$HOME/.config")]";'
               ' cat "$HOME/.config/mini-swe-agent/.env";'
               ' echo hi > "$HOME/.config/mini-swe-agent/.env" || echo READ-ONLY')  # fmt: skip
    assert "HOME [.config] [mini-swe-agent]" in seen  # its configuration, nothing else
    # It reads its own key (the file is there), and selfforge's record of it is masked.
    assert "READ-ONLY" in seen and "***" in seen and "sk-mini-own" not in seen
    seen = run(
        "claude",
        'echo changed > "$HOME/.claude/settings.json" && cat "$HOME/.claude/settings.json"',
    )
    assert "changed" in seen  # a copy it may write...
    assert (home / ".claude/settings.json").read_text() == "{}\n"  # ...and the user's is untouched


# --- Claude Code and Codex (npm) ----------------------------------------------------------


def npm_agent(program: str) -> Path | None:
    """Claude Code and Codex from npm, installed by .ci/run outside the clone
    (SELFFORGE_AGENTS/node_modules/.bin), or on PATH."""
    own = AGENTS / "node_modules" / ".bin" / program
    if own.exists():
        return own.parent
    found = shutil.which(program)
    return Path(found).parent if found else None


def sse(events: list[tuple[str, dict]]) -> Response:
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return Response(body, content_type="text/event-stream")


def anthropic_replay(server: HTTPServer, turns: list[str | dict]) -> list[dict]:
    """Anthropic's Messages API, streamed: each request of the agent's loop (one that
    offers tools) gets the next turn, a text or a tool call ({"tool", "input"})."""
    seen: list[dict] = []

    def answer(request: Request) -> Response:
        body = json.loads(request.data or b"{}")
        seen.append(body)
        turn = turns.pop(0) if body.get("tools") and turns else "OK"
        if isinstance(turn, str):
            block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": turn}
        else:
            block = {"type": "tool_use", "id": f"toolu_{len(seen)}", "name": turn["tool"]}
            block["input"] = {}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(turn["input"])}
        stop = "end_turn" if isinstance(turn, str) else "tool_use"
        usage = {"input_tokens": 100, "output_tokens": 20}
        message = {"id": f"msg_{len(seen)}", "type": "message", "role": "assistant",
                   "model": body.get("model"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": usage}  # fmt: skip
        return sse([
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 20},
                               "delta": {"stop_reason": stop, "stop_sequence": None}}),
            ("message_stop", {"type": "message_stop"}),
        ])  # fmt: skip

    server.expect_request(re.compile("/v1/messages.*"), method="POST").respond_with_handler(answer)
    return seen


def responses_replay(server: HTTPServer, turns: list[str | dict]) -> list[dict]:
    """OpenAI's Responses API, streamed, as Codex calls it: each request gets the next
    turn, a text or a function call ({"name", "args"})."""
    seen: list[dict] = []

    def answer(request: Request) -> Response:
        body = json.loads(request.data or b"{}")
        seen.append(body)
        turn = turns.pop(0) if turns else "Done."
        if isinstance(turn, str):
            text = {"type": "output_text", "text": turn, "annotations": []}
            item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [text]}  # fmt: skip
        else:
            item = {"type": "function_call", "id": "fc_1", "call_id": f"call_{len(seen)}",
                    "name": turn["name"], "arguments": json.dumps(turn["args"]),
                    "status": "completed"}  # fmt: skip
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 120}  # fmt: skip
        rid = f"resp_{len(seen)}"
        return sse([
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": rid, "usage": usage}}),
        ])  # fmt: skip

    server.expect_request(re.compile(".*/responses"), method="POST").respond_with_handler(answer)
    return seen


FIX_SED = "sed -i '2s/a - b/a + b/' calc.py"
CHEAT_SED = "sed -i 's/assert add(2, 3) == 5/assert add(2, 3) == -1/' test_calc.py"


def npm_agent_run(tmp_path: Path, server: HTTPServer, script, agent: str, spec: str) -> Path:
    bin_dir = npm_agent(agent)
    if bin_dir is None:
        pytest.skip(f"{agent} is not installed (.ci/run: npm install --prefix {AGENTS})")
    extra = f'\n[model]\nagent = "{agent}"\nagent_model = "{spec}"\nagent_seconds = 300\n'
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC}
    repo = make_repo(tmp_path / "repo", files, directives(extra=extra))
    run_agent(repo, script, bin_dir)
    return repo


@pytest.mark.slow
@pytest.mark.parametrize(("command", "outcome"), [(FIX_SED, "accepted"), (CHEAT_SED, "rejected")])
def test_claude_code_against_a_local_messages_server(
    tmp_path: Path, httpserver: HTTPServer, script, command: str, outcome: str
) -> None:
    seen = anthropic_replay(
        httpserver,
        [{"tool": "Bash", "input": {"command": command, "description": "edit"}}, "Done."],
    )
    spec = f"anthropic:claude-sonnet-4-5@{httpserver.url_for('').rstrip('/')}"
    repo = npm_agent_run(tmp_path, httpserver, script, "claude", spec)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == outcome, attempt
    assert ("return a + b" in (repo / "calc.py").read_text()) == (outcome == "accepted")
    assert "== 5" in (repo / "test_calc.py").read_text()
    assert TASK in json.dumps(seen[0]["messages"]) and seen[0]["model"] == "claude-sonnet-4-5"
    rows = steps(repo)
    assert rows[-1]["kind"] == "transcript" and rows[-1]["exit_code"] == 0
    [bash] = [r for r in rows if r["kind"] == "agent" and "Bash" in (r["action"] or "")]
    assert command in json.loads(bash["action"].removeprefix("Bash: "))["command"]
    [call] = agent_calls(repo)  # its stream-json result: tokens and its own cost
    assert call["input_tokens"] > 0 and call["cost_usd"] is not None and call["cost_usd"] > 0


@pytest.mark.slow
@pytest.mark.parametrize(("command", "outcome"), [(FIX_SED, "accepted"), (CHEAT_SED, "rejected")])
def test_codex_against_a_local_responses_server(
    tmp_path: Path, httpserver: HTTPServer, script, command: str, outcome: str
) -> None:
    seen = responses_replay(
        httpserver, [{"name": "exec_command", "args": {"cmd": command}}, "Done."]
    )
    repo = npm_agent_run(
        tmp_path, httpserver, script, "codex", f"openai:test-model@{httpserver.url_for('/v1')}"
    )

    [attempt] = log_json(repo)
    assert attempt["outcome"] == outcome, attempt
    assert ("return a + b" in (repo / "calc.py").read_text()) == (outcome == "accepted")
    assert "== 5" in (repo / "test_calc.py").read_text()
    assert seen and seen[0]["model"] == "test-model" and TASK in json.dumps(seen[0]["input"])
    [call] = agent_calls(repo)  # turn.completed's usage; Codex reports no cost
    assert call["input_tokens"] == 200 and call["output_tokens"] == 40 and call["cost_usd"] is None


def gemini_replay(server: HTTPServer, turns: list[str | dict]) -> list[dict]:
    """Gemini's streamGenerateContent (alt=sse): each request of the agent's loop (one
    that offers tools) gets the next turn, a text or a function call ({"name", "args"})."""
    seen: list[dict] = []

    def answer(request: Request) -> Response:
        body = json.loads(request.data or b"{}")
        seen.append(body)
        turn = turns.pop(0) if body.get("tools") and turns else "Done."
        part = {"text": turn} if isinstance(turn, str) else {"functionCall": turn}
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20},
        }
        return Response(f"data: {json.dumps(chunk)}\n\n", content_type="text/event-stream")

    server.expect_request(
        re.compile(".*:streamGenerateContent"), method="POST"
    ).respond_with_handler(answer)
    return seen


@pytest.mark.slow
def test_gemini_cli_against_a_local_gemini_server(
    tmp_path: Path, httpserver: HTTPServer, script
) -> None:
    call = {"name": "run_shell_command", "args": {"command": FIX_SED}}
    seen = gemini_replay(httpserver, [call, "Fixed add()."])
    spec = f"gemini:gemini-2.5-flash@{httpserver.url_for('').rstrip('/')}"
    repo = npm_agent_run(tmp_path, httpserver, script, "gemini", spec)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    assert "return a + b" in (repo / "calc.py").read_text()
    assert TASK in json.dumps(seen[0]["contents"])
    [call_row] = agent_calls(repo)  # its JSON output's stats: tokens, no cost
    assert call_row["input_tokens"] >= 200 and call_row["cost_usd"] is None


# --- usage ----------------------------------------------------------------------------------


def test_an_unknown_agent_a_missing_program_or_no_sandbox_is_a_usage_error(
    calc_repo: Path, script
) -> None:
    base = ("run", "--repo", str(calc_repo), "--model", script(), "--task", TASK)
    proc = cli(*base, "--agent", "nosuch")
    assert proc.returncode == 2 and "--agent 'nosuch': use one of mini, aider" in proc.stderr
    proc = cli(*base, "--agent", "gemini", env={"PATH": os.defpath})
    assert proc.returncode == 2 and "`gemini` is not on PATH" in proc.stderr
    assert "npm install -g @google/gemini-cli" in proc.stderr
    proc = cli(*base, "--agent", "cmd:true", "--no-sandbox")
    assert proc.returncode == 2 and "runs commands only in the sandbox" in proc.stderr
    assert "Traceback" not in proc.stderr and not (calc_repo / ".selfforge").exists()


def test_each_adapter_points_its_agent_at_the_model_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfforge.propose.agent_models import Endpoint
    from selfforge.propose.agents import ADAPTERS, Job, adapter_for

    local = Endpoint("openai", "m1", "http://127.0.0.1:9/v1", "sk-local-key-1234567890")
    job = Job(tmp_path / "task.md", tmp_path, local)
    assert "-m openai/m1" in ADAPTERS["mini"].argv("/x/mini", job)
    assert ADAPTERS["mini"].env(job)["OPENAI_API_BASE"] == "http://127.0.0.1:9/v1"
    assert "--openai-api-base http://127.0.0.1:9/v1" in ADAPTERS["aider"].argv("/x/aider", job)
    assert "--no-auto-commits" in ADAPTERS["aider"].argv("/x/aider", job)
    codex = ADAPTERS["codex"].argv("/x/codex", job)
    assert "model_providers.selfforge.base_url=http://127.0.0.1:9/v1" in codex
    assert ADAPTERS["codex"].env(job) == {"OPENAI_API_KEY": "sk-local-key-1234567890"}
    claude = Endpoint("anthropic", "claude-x", "http://127.0.0.1:9", "k")
    env = ADAPTERS["claude"].env(Job(job.task_file, tmp_path, claude))
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["ANTHROPIC_API_KEY"] == "k"
    # Without a model of ours, the agent's own configuration decides: no option, no key.
    own = Job(job.task_file, tmp_path, None)
    assert " -m " not in ADAPTERS["mini"].argv("/x/mini", own)
    assert "ANTHROPIC_API_KEY" not in ADAPTERS["claude"].env(own)
    # ...with its own provider's key from this environment, and no other.
    from selfforge.propose.external import agent_env

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-users-own-0123456789")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-users-own-0123456789")
    job.task_file.write_text("the task\n")
    env = agent_env(ADAPTERS["claude"], own)
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-users-own-0123456789"
    assert "OPENAI_API_KEY" not in env and env["SELFFORGE_TASK"] == "the task\n"
    cmd = adapter_for("cmd:my-agent --task {task} --file {task_file}").argv("", job)
    assert cmd == f'my-agent --task "$(cat {job.task_file})" --file {job.task_file}'


def test_a_rejected_agent_change_comes_back_to_it_with_the_judges_findings(
    tmp_path: Path, script
) -> None:
    d = directives(max_repairs=1)
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, d)
    # First a wrong fix; told of the rejection, it fixes its own change (still in the files).
    agent = (
        "cmd:if grep -q 'rejected your change' {task_file}; then"
        " sed -i '2s/a \\* b/a + b/' calc.py; else sed -i '2s/a - b/a * b/' calc.py; fi"
    )
    cli(
        "run",
        "--repo",
        str(repo),
        "--model",
        script(),
        "--task",
        TASK,
        "--agent",
        agent,
        check=True,
    )

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["repairs"] == 1, attempt
    rows = steps(repo)
    assert [(r["kind"], r["round"]) for r in rows] == [
        ("task", 0), ("transcript", 0), ("feedback", 1), ("transcript", 1)
    ]  # fmt: skip
    assert "test_add" in rows[2]["output"] and TASK in rows[2]["output"]


def test_an_agent_past_its_wall_time_is_stopped_and_what_it_left_is_judged(
    tmp_path: Path, script
) -> None:
    d = directives(extra="\n[model]\nagent_seconds = 2\n")
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, d)
    agent = "cmd:sed -i '2s/a - b/a + b/' calc.py; sleep 60; echo NEVER-SEEN"
    cli(
        "run",
        "--repo",
        str(repo),
        "--model",
        script(),
        "--task",
        TASK,
        "--agent",
        agent,
        check=True,
    )

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt  # its change was made before the stop
    [transcript] = [s for s in steps(repo) if s["kind"] == "transcript"]
    output = transcript["output"].split("\n", 1)[1]  # after its command line
    assert transcript["exit_code"] is None and "NEVER-SEEN" not in output
    assert "[stopped after 2 s, [model] agent_seconds]" in output
