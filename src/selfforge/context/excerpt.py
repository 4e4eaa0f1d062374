"""Focused excerpts of a file too large to show whole.

A file is cut into units (its header, each function, each method, each class head);
the units that mention the task's words most are kept, in file order, and the gaps are
marked so a model knows the lines it sees are not contiguous.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from selfforge.context.index import DefRecord
from selfforge.context.tokens import estimate_tokens
from selfforge.context.words import search_words

HEADER_LINES = 30


@dataclass(frozen=True)
class _Unit:
    start: int  # 0-based, inclusive
    end: int  # exclusive
    score: float


def focused_excerpt(
    text: str, defs: Sequence[DefRecord], task_words: Sequence[str], budget: int
) -> str:
    """The parts of ``text`` most about ``task_words`` that fit ``budget`` tokens."""
    lines = text.splitlines(keepends=True)
    units = _units(lines, defs, set(task_words))
    chosen: list[_Unit] = []
    used = 0
    for unit in sorted(units, key=lambda u: (-u.score, u.start)):
        text_of_unit = "".join(lines[unit.start : unit.end])
        if used + len(text_of_unit) // 4 + 8 > budget:
            continue  # cannot fit: the estimate is never below a token per 4 characters
        cost = estimate_tokens(text_of_unit) + 8
        if used + cost <= budget:
            chosen.append(unit)
            used += cost
    return _render(lines, sorted(chosen, key=lambda u: u.start))


def _units(lines: list[str], defs: Sequence[DefRecord], words: set[str]) -> list[_Unit]:
    def score(start: int, end: int, bonus: float = 0.0) -> float:
        found = set(search_words("".join(lines[start:end])))
        return len(found & words) + bonus

    first_def = min((d.line - 1 for d in defs), default=len(lines))
    header_end = min(first_def, HEADER_LINES)
    units = [_Unit(0, header_end, score(0, header_end, bonus=0.5))] if header_end else []
    # A class with methods contributes its head; each method is a unit of its own.
    starts_of_children: dict[str, int] = {}
    for d in defs:
        if d.parent:
            starts_of_children.setdefault(d.parent, d.line - 1)
    for d in defs:
        start = d.line - 1
        qualified = f"{d.parent}.{d.name}" if d.parent else d.name
        end = starts_of_children.get(qualified, d.end_line) if d.kind == "class" else d.end_line
        end = max(end, start + 1)
        named = 3.0 if d.name.lower() in words else 0.0
        units.append(_Unit(start, end, score(start, end, named)))
    return units


def _render(lines: list[str], units: list[_Unit]) -> str:
    out: list[str] = []
    cursor = 0
    for unit in units:
        if unit.start < cursor:  # nested in a unit already shown
            continue
        if unit.start > cursor:
            out.append(f"⋮ (lines {cursor + 1}-{unit.start} not shown)\n")
        out.extend(lines[unit.start : unit.end])
        cursor = unit.end
    if cursor < len(lines):
        out.append(f"⋮ (lines {cursor + 1}-{len(lines)} not shown)\n")
    return "".join(out)
