"""The scripted model (``script:PATH``): replays per-role queues of replies from JSON.

It stands in for the LLM in tests, in the demo's bundled replay and when reproducing a
run without a network. Format and defaults are DESIGN.md §2.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from selfforge.errors import UsageError
from selfforge.models.base import (
    ERROR_KINDS,
    ROLES,
    RateLimited,
    Reply,
    Request,
    Usage,
)
from selfforge.models.tokens import estimate_tokens


def default_reply(request: Request) -> str:
    """The neutral reply for a role whose queue is absent or used up."""
    hints = request.hints
    match request.role:
        case "plan":
            goals = hints.get("goals") or []
            return f"1. {goals[0]}" if goals else ""
        case "critique":
            return "NO CONCERNS"
        case "review":
            return "APPROVE: no concerns"
        case "reflect":
            return default_lesson(
                hints.get("task", "the task"),
                hints.get("outcome", "ended"),
                hints.get("reason", ""),
            )
        case "diagnose":
            return str(hints.get("instruction", ""))
        case _:
            return ""


class ScriptModel:
    """Answers each role from its queue, in order; see DESIGN.md §2."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.spec = f"script:{path}"
        self.queues = _load_script(self.path)
        self.calls: list[Request] = []
        self.consumed: dict[str, int] = {}
        state = os.environ.get("SELFFORGE_SCRIPT_STATE")
        if state and Path(state).is_file():  # a restarted run resumes the queues
            for role, count in json.loads(Path(state).read_text()).items():
                del self.queues.get(role, [])[:count]
                self.consumed[role] = count

    def save_state(self, path: Path) -> Path:
        """Record how far each queue was consumed, for a restarted process."""
        path.write_text(json.dumps(self.consumed))
        return path

    def complete(self, request: Request) -> Reply:
        self.calls.append(request)
        started = time.monotonic()
        queue = self.queues.get(request.role)
        item: Any = queue.pop(0) if queue else None
        if item is not None:
            self.consumed[request.role] = self.consumed.get(request.role, 0) + 1
        truncated = False
        if item is None:
            content, usage = default_reply(request), None
        elif isinstance(item, str):
            content, usage = item, None
        else:
            if "error" in item:
                _raise_scripted_error(str(item["error"]), self.path)
            content, usage = str(item.get("content", "")), item.get("usage")
            truncated = bool(item.get("truncated", False))
        prompt_text = "\n".join(m.content for m in request.messages)
        usage_rec = Usage(
            input_tokens=int((usage or {}).get("input_tokens", estimate_tokens(prompt_text))),
            output_tokens=int((usage or {}).get("output_tokens", estimate_tokens(content))),
            cached_tokens=int((usage or {}).get("cached_tokens", 0)),
            thinking_tokens=int((usage or {}).get("thinking_tokens", 0)),
        )
        return Reply(
            content=content,
            usage=usage_rec,
            model=self.spec,
            latency_s=time.monotonic() - started,
            cost_usd=0.0,
            truncated=truncated,
        )


def _raise_scripted_error(kind: str, path: Path) -> None:
    cls = ERROR_KINDS.get(kind)
    if cls is None:
        known = ", ".join(sorted(ERROR_KINDS))
        raise UsageError(f"{path}: unknown scripted error {kind!r}; use one of: {known}")
    message = f"scripted {kind} error"
    if cls is RateLimited:
        raise RateLimited(message, retry_after_s=0.0)
    raise cls(message)


def _load_script(path: Path) -> dict[str, list[Any]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"script model file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); "
            'the script is an object like {"propose": ["..."]}'
        ) from None
    if not isinstance(raw, dict):
        raise UsageError(f'{path}: the script must be a JSON object like {{"propose": ["..."]}}')
    queues: dict[str, list[Any]] = {}
    for role, replies in raw.items():
        if role not in ROLES:
            raise UsageError(f"{path}: unknown role {role!r}; roles are: {', '.join(ROLES)}")
        if not isinstance(replies, list):
            raise UsageError(f"{path}: role {role!r} must map to a list of replies")
        for i, item in enumerate(replies):
            ok = isinstance(item, str) or (
                isinstance(item, dict) and ("content" in item or "error" in item)
            )
            if not ok:
                raise UsageError(
                    f"{path}: {role}[{i}] must be a string, "
                    '{"content": ..., "usage": {...}} or {"error": "rate_limit"}'
                )
        queues[role] = list(replies)
    return queues


def default_lesson(task: str, outcome: str, reason: str) -> str:
    """The lesson kept when no reflect role speaks (or the scripted model has none)."""
    lesson = f"Attempt at '{task}' was {outcome}"
    return f"{lesson}: {reason}" if reason else lesson + "."
