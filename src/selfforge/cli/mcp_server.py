"""``selfforge mcp``: the judge, one task, and the journal, for any MCP client.

A Model Context Protocol server over stdio, built on the official ``mcp`` SDK (extra
``mcp``). Tools: ``check`` (judge a commit, range, branch or patch: ``selfforge check``),
``run_task`` (one ``run --task``), ``log``, ``show`` and ``plan``; attempts are resources
(``attempt://ID``, the recent ones listed); the server reports selfforge's version.
Nothing lands unless the user started the server with ``--allow-land``: ``check``
refuses ``land`` and ``run_task`` keeps its change on a branch. Every tool call is
journaled (``tool_calls``). Long calls report progress as MCP progress notifications,
one per judge step.

The protocol owns the process's real standard output: everything selfforge itself would
print goes to standard error instead, so no stray line can corrupt the channel.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selfforge import __version__
from selfforge.errors import SelfforgeError, UsageError
from selfforge.journal.store import Journal
from selfforge.models.secrets import mask
from selfforge.repo.workspace import Workspace
from selfforge.ui.reporters import SilentReporter

try:
    import anyio
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.server.stdio import stdio_server
except ImportError:  # the extra is not installed: `selfforge mcp` says how to get it
    FastMCP = None  # type: ignore[assignment,misc]

INSTRUCTIONS = (
    "selfforge judges code changes: `check` runs the project's tests, lint and integrity "
    "rules in a sandbox on a commit, range, branch or patch and says accepted, rejected or "
    "needs_review with reasons (the base's tests, in their base version, judge the change's "
    "code: a change that weakens, skips or deletes a test to hide a regression is "
    "rejected). `run_task` lets selfforge attempt one task itself. `log` and `show` read "
    "the journal of every attempt."
)


class ProgressReporter(SilentReporter):
    """Judge steps as MCP progress notifications (and kept as lines for the result)."""

    def __init__(self, notify: Callable[[float, str], None]) -> None:
        super().__init__()
        self.notify, self.count = notify, 0

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        super().step(name, ok, detail, seconds)
        self.count += 1
        mark = {True: "ok", False: "failed", None: "-"}[ok]
        self.notify(float(self.count), f"{name}: {mark} {detail}".strip())


def _journaling_server(ws: Workspace) -> Any:
    """FastMCP whose every tool call — valid, invalid or unknown — is journaled."""

    class JournalingMCP(FastMCP):  # type: ignore[misc,valid-type]
        async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
            try:
                result = await super().call_tool(name, arguments)
            except Exception as exc:
                text = str(exc)
                outcome = "refused" if REFUSED in text else "error"
                _record(ws, name, arguments, outcome, text)
                raise
            _record(ws, name, arguments, "ok", _summary(result))
            return result

        async def list_resources(self) -> list[Any]:
            """The templates' resources, and the journal's recent attempts one by one (a
            template alone is not listed: a client would see none to read)."""
            return [*await super().list_resources(), *_recent_attempts(ws)]

    server = JournalingMCP("selfforge", instructions=INSTRUCTIONS)
    server._mcp_server.version = __version__  # the SDK's own version otherwise
    return server


RECENT = 50  # attempts listed as resources, newest first


def _recent_attempts(ws: Workspace) -> list[Any]:
    from mcp.types import Resource

    if not (ws.state / "journal.db").exists():
        return []
    with Journal(ws.state / "journal.db") as journal:
        attempts = journal.attempts(last=RECENT)[::-1]
    return [
        Resource(
            uri=f"attempt://{a.id}",  # type: ignore[arg-type]
            name=f"attempt {a.id}",
            description=f"{a.outcome}: {a.task}"[:300],
            mimeType="application/json",
        )
        for a in attempts
    ]


def _summary(result: Any) -> str:
    data = result[1] if isinstance(result, tuple) and len(result) == 2 else result
    if isinstance(data, dict):
        data = data.get("result", data)
        if isinstance(data, dict):
            return str(data.get("verdict") or data.get("stop_reason") or "")[:500]
    return ""


REFUSED = "landing is off"


def build(repo: Path, allow_land: bool) -> Any:
    """The MCP server for ``repo``."""
    if FastMCP is None:
        raise UsageError(
            "selfforge mcp needs the mcp extra: pip install 'selfforge[mcp]' (the official "
            "Model Context Protocol SDK)"
        )
    ws = Workspace(repo)
    server = _journaling_server(ws)

    @server.tool()
    async def check(
        ctx: Context,
        change: str = "HEAD",
        patch: str | None = None,
        task: str | None = None,
        land: bool = False,
        changes: list[str] | None = None,
    ) -> dict[str, Any]:
        """Judge a change: a commit, an A..B range or a branch (`change`), or a unified diff
        on top of HEAD (`patch`). Returns the verdict (accepted, rejected, or needs_review:
        every gate passed but a person must look at what `review` lists) with exit_code
        0, 1 or 3, its reason, each step and the journal's attempt id. `changes`: tests the
        change means to change (their base versions may fail; the verdict is then
        needs_review). `land` fast-forwards the user's branch when accepted, only if the
        server was started with --allow-land."""
        if land and not allow_land:
            raise ToolError(
                f"{REFUSED}: the user did not start the server with --allow-land; call "
                "check without land"
            )

        def work(notify: Callable[[float, str], None]) -> dict[str, Any]:
            from selfforge.config import load_directives
            from selfforge.run.check import check as judge

            result = judge(
                ws,
                load_directives(ws.root),
                ProgressReporter(notify),
                rev=None if patch is not None else change,
                patch=patch,
                task=task,
                land=land,
                changes=changes,
            )
            return result.to_json()

        return await _call(ctx, work)

    @server.tool()
    async def run_task(ctx: Context, task: str, model: str | None = None) -> dict[str, Any]:
        """Let selfforge attempt one task (propose, judge, land or keep a branch) with the
        model of the project's directives or `model` (PROVIDER:MODEL). Without
        --allow-land the change is kept on a selfforge/ branch, never landed."""

        def work(notify: Callable[[float, str], None]) -> dict[str, Any]:
            from selfforge.run.session import start_run

            return start_run(
                ws.root,
                task=task,
                model=model,
                land=None if allow_land else "branch",
                quiet=True,
                reporter=ProgressReporter(notify),
            )

        return await _call(ctx, work)

    @server.tool()
    def log(last: int = 20, outcome: str | None = None) -> list[dict[str, Any]]:
        """The journal's attempts, newest last: id, task, outcome, reason, commit, branch."""
        with _errors(), _journal(ws) as journal:
            rows = [a.to_json() for a in journal.attempts(last=max(1, min(last, 500)))]
        return [r for r in rows if outcome is None or r["outcome"] == outcome]

    @server.tool()
    def show(attempt: int) -> dict[str, Any]:
        """One attempt: task, outcome, reason, its checks (name, pass, output) and diff."""
        with _errors():
            return _attempt(ws, attempt)

    @server.tool()
    def plan(all_tasks: bool = False) -> list[dict[str, Any]]:
        """The backlog: open tasks in the order they run (all_tasks: the closed ones too)."""
        from selfforge.run.planner import Backlog

        with _errors(), _journal(ws) as journal:
            backlog = Backlog(journal)
            tasks = backlog.all_tasks() if all_tasks else backlog.open_tasks()
            return [{"id": t.id, "text": t.text, "status": t.status} for t in tasks]

    @server.resource("attempt://{attempt_id}", mime_type="application/json")
    def attempt_resource(attempt_id: str) -> str:
        """One attempt of the journal, as `show` returns it."""
        with _errors():
            if not attempt_id.isdigit():
                raise ToolError(f"attempt://{attempt_id}: an attempt id is a number")
            return json.dumps(_attempt(ws, int(attempt_id)), indent=2)

    return server


async def _call(
    ctx: Any, work: Callable[[Callable[[float, str], None]], dict[str, Any]]
) -> dict[str, Any]:
    """Run a long tool in a worker thread, its steps reported as progress."""

    def notify(progress: float, message: str) -> None:
        anyio.from_thread.run(ctx.report_progress, progress, None, message)

    def guarded() -> dict[str, Any]:
        with _errors():
            return work(notify)

    return await anyio.to_thread.run_sync(guarded)


class _errors:
    """A SelfforgeError (the user's kind: one line, the cause and the fix) becomes the
    ToolError the client shows."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, SelfforgeError):
            raise ToolError(exc.message) from None
        return False


def _record(ws: Workspace, tool: str, args: dict[str, Any], outcome: str, detail: str) -> None:
    ws.prepare()
    arguments = mask(json.dumps(args)[:20_000])
    with Journal(ws.state / "journal.db") as journal:
        journal.record_tool_call(tool, arguments, outcome, mask(detail[:2000]))


def _journal(ws: Workspace) -> Journal:
    if not (ws.state / "journal.db").exists():
        raise ToolError(f"no journal in {ws.root} yet: nothing has been checked or run there")
    return Journal(ws.state / "journal.db")


def _attempt(ws: Workspace, attempt_id: int) -> dict[str, Any]:
    with _journal(ws) as journal:
        found = [a for a in journal.attempts() if a.id == attempt_id]
        if not found:
            raise ToolError(f"no attempt {attempt_id}; `log` lists the attempts")
        record = found[0].to_json()
        record["diff"] = found[0].diff or ""
        record["checks"] = [
            {"name": c["name"], "passed": bool(c["passed"]), "output": (c["output"] or "")[-4000:]}
            for c in journal.checks(attempt_id)
        ]
    return record


def serve(repo: Path, allow_land: bool) -> None:
    """Serve over stdio until the client closes it. The protocol keeps the real stdout;
    whatever else would print there goes to stderr."""
    server = build(repo, allow_land)
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    async def main() -> None:
        out = anyio.wrap_file(io.TextIOWrapper(protocol, encoding="utf-8", write_through=True))
        async with stdio_server(stdout=out) as (read, write):
            low = server._mcp_server  # FastMCP's own run_stdio_async, with our stdout
            await low.run(read, write, low.create_initialization_options())

    anyio.run(main)
