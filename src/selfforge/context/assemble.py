"""Prompt assembly: fit named sections into a model's context window.

The task and the instructions are never cut. The other sections share what is left by
fixed proportions; a section that needs less than its share gives the rest to the
others, so a short lessons list never starves and a huge failure log never crowds out
the files. What is cut is replaced by a note saying so, and the tokens each section
used come back for the journal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from selfforge.context.tokens import estimate_tokens

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
    room = context_window - reserve_output - sum(need[n] for n in sections if n in fixed)
    budgets = section_budgets({n: need[n] for n in sections if n not in fixed}, max(room, 0))
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
