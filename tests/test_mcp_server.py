"""`selfforge mcp` driven by the official MCP SDK's real client over stdio: it lists its
tools, judges a bad and a good patch, reports progress, reads the journal, refuses to
land unless allowed, and answers a malformed request with an MCP error, not a crash."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from selfforge.journal.store import Journal

from conftest import CALC, FIX_ADD, TEST_CALC, directives, git, make_repo

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

FIXED = CALC.replace("return a - b", "return a + b", 1)


def _diff(repo: Path, text: str) -> str:
    (repo / "calc.py").write_text(text)
    diff = git(repo, "diff")
    git(repo, "checkout", "--", "calc.py")
    return diff


async def _session_calls(repo: Path, good: str, bad: str, spec: str) -> dict[str, object]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "selfforge", "mcp", "--repo", str(repo)],
        env={**os.environ},
    )
    seen: dict[str, object] = {"progress": []}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen["progress"].append(message)  # type: ignore[union-attr]

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
        seen["bad"] = await session.call_tool("check", {"patch": bad})
        seen["good"] = await session.call_tool(
            "check", {"patch": good}, progress_callback=on_progress
        )
        seen["land"] = await session.call_tool("check", {"patch": good, "land": True})
        seen["malformed"] = await session.call_tool("show", {"attempt": "not a number"})
        seen["unknown"] = await session.call_tool("no_such_tool", {})
        seen["log"] = await session.call_tool("log", {})
        seen["resource"] = await session.read_resource("attempt://1")
        seen["run_task"] = await session.call_tool(
            "run_task", {"task": "Fix add() so test_add passes", "model": spec}
        )
    return seen


def _json(result: object) -> object:
    assert not result.isError, result  # type: ignore[attr-defined]
    structured = getattr(result, "structuredContent", None)
    if structured is not None:
        return structured.get("result", structured)
    return json.loads(result.content[0].text)  # type: ignore[attr-defined]


def test_an_mcp_client_judges_patches_and_reads_the_journal(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    head = git(repo, "rev-parse", "HEAD")
    good = _diff(repo, FIXED)
    bad = _diff(repo, FIXED.replace("a * b", "a + b"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"propose": [FIX_ADD]}))
    seen = anyio.run(_session_calls, repo, good, bad, f"script:{script}")

    assert seen["tools"] == ["check", "log", "plan", "run_task", "show"]
    bad_verdict = _json(seen["bad"])
    assert bad_verdict["verdict"] == "rejected" and "test_mul" in bad_verdict["reason"]
    assert _json(seen["good"])["verdict"] == "accepted"
    assert any("tests" in str(m) for m in seen["progress"])  # one notification per step

    # Landing is the user's call: refused, and HEAD did not move.
    assert seen["land"].isError and "--allow-land" in seen["land"].content[0].text
    assert git(repo, "rev-parse", "HEAD") == head
    # A malformed request and an unknown tool are MCP errors; the server went on serving.
    assert seen["malformed"].isError and seen["unknown"].isError
    attempts = _json(seen["log"])
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted"]
    resource = json.loads(seen["resource"].contents[0].text)
    assert resource["outcome"] == "rejected" and "calc.py" in resource["diff"]

    # One task through the loop: accepted, and kept on a branch (landing is off).
    run = _json(seen["run_task"])
    [attempt] = run["attempts"]
    assert attempt["outcome"] == "accepted" and attempt["landed"] is False
    assert attempt["branch"].startswith("selfforge/")
    assert git(repo, "rev-parse", "HEAD") == head

    with Journal(repo / ".selfforge" / "journal.db") as journal:
        calls = journal.tool_calls()
    assert [c["tool"] for c in calls][:3] == ["check", "check", "check"]
    assert [c["outcome"] for c in calls][:3] == ["ok", "ok", "refused"]
    assert any(c["tool"] == "show" and c["outcome"] == "error" for c in calls)
