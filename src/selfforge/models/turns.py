"""Shaping a message list for APIs that take the system prompt apart and want turns to
alternate user/assistant, starting with the user (Gemini, Anthropic)."""

from __future__ import annotations

import re

from selfforge.models.base import Message

# Reasoning models served locally (DeepSeek-R1, Qwen3) often put their thinking inline.
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


def split_system(messages: list[Message]) -> tuple[str, list[tuple[str, str]]]:
    """(system text, [(role, text)]) with same-role neighbours merged."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns: list[tuple[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1][0] == m.role:
            turns[-1] = (m.role, turns[-1][1] + "\n\n" + m.content)
        else:
            turns.append((m.role, m.content))
    if not turns or turns[0][0] != "user":
        # Both APIs reject a conversation that opens with the assistant (or is empty).
        turns.insert(0, ("user", "Continue."))
    return system, turns


def strip_thinking(text: str) -> str:
    """``text`` without a leading ``<think>...</think>`` block: the answer only."""
    return _THINK.sub("", text, count=1)
