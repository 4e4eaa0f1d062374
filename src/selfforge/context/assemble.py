"""Prompt assembly: fit named sections into a model's context window.

The room is ``window − max output − margin`` (the margin holds the system prompt, the
template and the estimate's error). The task and the instructions are never cut. The
other sections share what is left by fixed proportions; a section that needs less than
its share gives the rest to the others, so a short lessons list never starves and a huge
failure log never crowds out the files. The target file (the first of ``files``) is the
minimum: when its share is too small, the other sections give up their room for it in a
stated order — the repo map, the directives and state, the lessons, then the history of
failures — and the retrieved files after it are cut first, since ``files`` keeps its
head. If the task and the target file still do not fit, ``PromptTooLarge`` names the
window, the need and how to raise it. What is cut is replaced by a note saying so, and
the tokens each section used come back for the journal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from selfforge.context.tokens import estimate_tokens
from selfforge.errors import SelfforgeError
from selfforge.models.generation import margin_tokens, suggest

# Relative shares of the room left after the fixed sections.
SHARES: dict[str, float] = {
    "directives": 0.08,
    "lessons": 0.10,
    "failures": 0.17,
    "repo_map": 0.20,
    "files": 0.45,
}
DEFAULT_SHARE = 0.05
# Failure output matters at both ends: the command at the top, the verdict at the bottom.
HEAD_AND_TAIL = frozenset({"failures"})
# Who gives up room for the target file, first to last.
SHRINK_ORDER = ("repo_map", "directives", "state", "lessons", "failures")
# The system prompt and the template's headings around the sections.
PROMPT_OVERHEAD = 150


class PromptTooLarge(SelfforgeError):
    """Even the task and its target file do not fit the model's window."""


@dataclass(frozen=True)
class AssembledPrompt:
    sections: dict[str, str]  # trimmed text, in the order given
    tokens: dict[str, int]  # tokens each section uses after trimming
    budgets: dict[str, int] = field(default_factory=dict)  # what each trimmable section got
    cut: dict[str, int] = field(default_factory=dict)  # tokens removed, by section

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())


def assemble_sections(
    sections: dict[str, str],
    *,
    context_window: int,
    reserve_output: int,
    fixed: Iterable[str] = ("task", "instructions"),
) -> AssembledPrompt:
    """Trim the non-fixed sections to budgets that together fit the context window."""
    fixed = set(fixed)
    need = {name: estimate_tokens(text) for name, text in sections.items()}
    overhead = margin_tokens(context_window) + PROMPT_OVERHEAD
    fixed_need = sum(need[n] for n in sections if n in fixed)
    room = context_window - reserve_output - overhead - fixed_need
    floor = estimate_tokens(target_file(sections.get("files", "")))
    if floor and room < floor:
        total = fixed_need + floor + reserve_output + overhead
        raise PromptTooLarge(
            f"the model's context window is {context_window} tokens, but the task and its "
            f"target file need about {total} (with {reserve_output} for the reply); raise "
            f"the server's context (llama.cpp -c {suggest(total)}, vLLM --max-model-len "
            f"{suggest(total)}, Ollama num_ctx) or use a model with a larger window"
        )
    budgets = section_budgets({n: need[n] for n in sections if n not in fixed}, max(room, 0))
    if floor and budgets.get("files", floor) < floor:
        _give_to_files(budgets, floor)
    out: dict[str, str] = {}
    cut: dict[str, int] = {}
    for name, text in sections.items():
        if name in fixed or need[name] <= budgets[name]:
            out[name] = text
            continue
        keep = "head_tail" if name in HEAD_AND_TAIL else "head"
        out[name] = trim_to_tokens(text, budgets[name], label=name, keep=keep)
        cut[name] = need[name] - estimate_tokens(out[name])
    tokens = {name: estimate_tokens(text) for name, text in out.items()}
    return AssembledPrompt(sections=out, tokens=tokens, budgets=budgets, cut=cut)


def target_file(files: str) -> str:
    """The first file block of the ``files`` section (path line, fenced text)."""
    opening = files.find("\n```")
    if opening < 0:
        return ""
    closing = files.find("\n```", opening + 4)
    return files[: closing + 4] if closing >= 0 else files


def _give_to_files(budgets: dict[str, int], floor: int) -> None:
    for name in SHRINK_ORDER:
        deficit = floor - budgets["files"]
        if deficit <= 0:
            return
        taken = min(budgets.get(name, 0), deficit)
        if taken:
            budgets[name] -= taken
            budgets["files"] += taken


def section_budgets(need: dict[str, int], room: int) -> dict[str, int]:
    """Water-filling: sections under their share keep what they need; the rest split."""
    budgets: dict[str, int] = {}
    open_sections = dict(need)
    while open_sections:
        total_share = sum(SHARES.get(n, DEFAULT_SHARE) for n in open_sections)
        left = room - sum(budgets.values())
        fair = {n: int(left * SHARES.get(n, DEFAULT_SHARE) / total_share) for n in open_sections}
        satisfied = [n for n in open_sections if open_sections[n] <= fair[n]]
        if not satisfied:
            budgets.update(fair)
            break
        for name in satisfied:
            budgets[name] = open_sections.pop(name)
    return {n: budgets[n] for n in need}


def trim_to_tokens(text: str, budget: int, *, label: str, keep: str = "head") -> str:
    """``text`` cut to ``budget`` tokens at line boundaries, with a note of what was cut."""
    total = estimate_tokens(text)
    if total <= budget:
        return text
    total_lines = text.count("\n")

    def note(kept: str) -> str:
        lines = total_lines - kept.count("\n")
        tokens = total - estimate_tokens(kept)
        return f"\n[... {label}: {lines} lines (~{tokens} tokens) cut to fit the context ...]\n"

    def build(chars: int) -> str:
        if keep == "head_tail":
            head = _cut_at_line(text[: chars // 2], from_end=False)
            tail = _cut_at_line(text[len(text) - chars // 2 :], from_end=True)
            return head + note(head + tail) + tail
        head = _cut_at_line(text[:chars], from_end=False)
        return head + note(head)

    # Every estimate is at least a token per four characters, which bounds the search.
    return _largest_fitting(build, min(len(text), 4 * budget + 4), budget)


def _cut_at_line(part: str, *, from_end: bool) -> str:
    """Snap a cut to a line boundary unless that would throw most of it away."""
    if from_end:
        at = part.find("\n")
        return part[at + 1 :] if 0 <= at < len(part) // 2 else part
    at = part.rfind("\n")
    return part[: at + 1] if at >= len(part) // 2 else part


def _largest_fitting(build: Callable[[int], str], limit: int, budget: int) -> str:
    low, high, best = 0, limit, build(0)
    while low <= high:
        middle = (low + high) // 2
        candidate = build(middle)
        if estimate_tokens(candidate) <= budget:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best
