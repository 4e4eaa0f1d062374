"""What each coding agent records of its own work, read back: its steps (for the
journal's trajectory) and what it spent (tokens, dollars), from its trajectory file or its
output. Every reader takes what it is given as untrusted text: a malformed record gives
fewer steps, never an error.

Step kinds: ``agent`` is an action of the agent and what it saw next (mini-swe-agent's
messages, Claude Code's tool calls and results, Codex's commands); ``log`` is a part of
its record that does not split that way (aider's chat history, Gemini CLI's answer).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

STEP_TEXT = 16_000  # one step's action or output, at most


@dataclass
class Spend:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


@dataclass
class AgentStep:
    kind: str
    action: str | None
    output: str


def mini_steps(text: str) -> list[AgentStep]:
    """mini-swe-agent's .traj.json: each assistant message, and the message after it."""
    messages = [m for m in _json(text).get("messages", []) if isinstance(m, dict)]
    steps: list[AgentStep] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        after = messages[i + 1] if i + 1 < len(messages) else {}
        seen = after.get("content", "") if after.get("role") != "assistant" else ""
        steps.append(_step("agent", _text(message.get("content")), _text(seen)))
    return steps


def mini_spend(output: str, text: str) -> Spend:
    stats = _json(text).get("info", {}).get("model_stats", {})
    cost = stats.get("instance_cost") if isinstance(stats, dict) else None
    return Spend(cost_usd=float(cost) if isinstance(cost, int | float) and cost > 0 else None)


def aider_steps(text: str) -> list[AgentStep]:
    """aider's chat history: a step per message it was sent (a ``#### `` paragraph
    block) with what followed it."""
    parts = re.split(r"^(?=#### )", text, flags=re.M)
    return [_step("log", None, p.strip()) for p in parts if p.strip().startswith("####")]


_AIDER_TOKENS = re.compile(r"Tokens: ([\d.,]+)(k?) sent, ([\d.,]+)(k?) received")
_AIDER_COST = re.compile(r"Cost: \$([\d.]+) message, \$([\d.]+) session")


def aider_spend(output: str, text: str) -> Spend:
    spent = Spend()
    for sent, k1, received, k2 in _AIDER_TOKENS.findall(output):
        spent.input_tokens += _count(sent, k1)
        spent.output_tokens += _count(received, k2)
    costs = _AIDER_COST.findall(output)
    spent.cost_usd = float(costs[-1][1]) if costs else None
    return spent


def claude_steps(output: str) -> list[AgentStep]:
    """Claude Code's stream-json: each assistant message (its text and tool calls), and
    the tool results of the user message after it."""
    steps: list[AgentStep] = []
    for event in _jsonl(output):
        content = (event.get("message") or {}).get("content")
        if event.get("type") == "assistant" and isinstance(content, list):
            steps.append(_step("agent", _blocks(content), ""))
        elif event.get("type") == "user" and isinstance(content, list) and steps:
            seen = "\n".join(_text(b.get("content")) for b in content if isinstance(b, dict))
            steps[-1] = _step("agent", steps[-1].action, steps[-1].output + seen)
    return steps


def claude_spend(output: str, text: str) -> Spend:
    spent = Spend()
    for event in _jsonl(output):
        if event.get("type") == "result":
            usage = event.get("usage") or {}
            spent.input_tokens = _int(usage.get("input_tokens"))
            spent.output_tokens = _int(usage.get("output_tokens"))
            cost = event.get("total_cost_usd")
            spent.cost_usd = float(cost) if isinstance(cost, int | float) else None
    return spent


def codex_steps(output: str) -> list[AgentStep]:
    """Codex's exec --json: each completed item (a command and its output, a message,
    a file change)."""
    steps = []
    for event in _jsonl(output):
        item = event.get("item") if event.get("type") == "item.completed" else None
        if not isinstance(item, dict) or item.get("type") == "reasoning":
            continue
        if item.get("type") == "command_execution":
            seen = f"exit {item.get('exit_code')}\n{_text(item.get('aggregated_output'))}"
            steps.append(_step("agent", _text(item.get("command")), seen))
        else:
            what = item.get("text") or item.get("message") or json.dumps(item)
            steps.append(_step("agent", _text(what), ""))
    return steps


def codex_spend(output: str, text: str) -> Spend:
    spent = Spend()
    for event in _jsonl(output):
        usage = event.get("usage") if event.get("type") == "turn.completed" else None
        if isinstance(usage, dict):
            spent.input_tokens += _int(usage.get("input_tokens"))
            spent.output_tokens += _int(usage.get("output_tokens"))
    return spent


def gemini_steps(output: str) -> list[AgentStep]:
    answer = _gemini_json(output).get("response")
    return [_step("log", None, answer)] if isinstance(answer, str) and answer else []


def gemini_spend(output: str, text: str) -> Spend:
    spent = Spend()
    models = _gemini_json(output).get("stats", {}).get("models", {})
    for stats in models.values() if isinstance(models, dict) else ():
        tokens = stats.get("tokens", {}) if isinstance(stats, dict) else {}
        spent.input_tokens += _int(tokens.get("prompt"))
        spent.output_tokens += _int(tokens.get("candidates"))
    return spent


def _gemini_json(output: str) -> dict:
    start = output.find("\n{")  # its JSON document follows the lines it prints first
    return _json(output if output.startswith("{") else output[start + 1 :] if start >= 0 else "")


def _step(kind: str, action: str | None, output: str) -> AgentStep:
    return AgentStep(kind, action[:STEP_TEXT] if action else action, output[:STEP_TEXT])


def _blocks(content: list) -> str:
    said = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            said.append(_text(block.get("text")))
        elif block.get("type") == "tool_use":
            said.append(f"{block.get('name')}: {json.dumps(block.get('input'))}")
    return "\n".join(said)


def _count(number: str, k: str) -> int:
    return int(float(number.replace(",", "")) * (1000 if k else 1))


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _jsonl(text: str) -> list[dict]:
    return [e for e in (_json(line) for line in text.splitlines() if line.startswith("{")) if e]


def _text(content: object) -> str:
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")
