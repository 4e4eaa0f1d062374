"""Find where a SEARCH belongs in a file, strictly first, then with tolerances.

The ladder: exact lines; trailing whitespace ignored; spurious blank lines at the edges
dropped; a uniform indentation shift (the replacement is re-indented to the file); and
`...` elision lines. Each rung is tried only when every stricter one found nothing, and
a rung that finds more than one place is an ambiguity, never a guess — unless a diff
hunk's header states one of those places as its start (repeated code in a real diff).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# `...`, `# ...`, `// ... existing code ...`, `/* ... */`: what models write for "unchanged".
ELISION = re.compile(
    r"^\s*(?:#|//|/\*|<!--|--)?\s*(?:\.\.\.|…)[\w ,'()]*(?:\.\.\.|…)?\s*(?:\*/|-->)?\s*$"
)


@dataclass(frozen=True)
class Span:
    start: int  # first line replaced, 0-based
    end: int  # one past the last line replaced
    replacement: tuple[str, ...]


@dataclass(frozen=True)
class Miss:
    ambiguous: tuple[int, ...] = ()  # 0-based starts when more than one place matched
    reason: str = ""  # a specific cause, when there is one better than "not found"


def locate(
    lines: list[str], search: list[str], replace: list[str], at_line: int | None = None
) -> list[Span] | Miss:
    """The spans to rewrite for this SEARCH/REPLACE pair, or why there are none;
    ``at_line``, a diff hunk's stated start, settles a tie when one place is there."""
    for rung in (_exact, _rstripped, _blank_trimmed, _reindented, _retabbed, _unnumbered):
        found = rung(lines, search, replace)
        if found is None:
            continue
        if isinstance(found, Miss):
            return found
        if len(found) == 1:
            return [found[0]]
        if len(found) > 1:
            there = [s for s in found if s.start == at_line]
            return there if len(there) == 1 else Miss(ambiguous=tuple(s.start for s in found))
    return _elided(lines, search, replace)


def apply_spans(lines: list[str], spans: list[Span]) -> list[str]:
    out = list(lines)
    for span in sorted(spans, key=lambda s: s.start, reverse=True):
        out[span.start : span.end] = span.replacement
    return out


def _find_all(hay: list[str], needle: list[str]) -> list[int]:
    """Every start where ``needle`` occurs in ``hay`` (list.index scans in C: fast)."""
    first, m = needle[0], len(needle)
    starts: list[int] = []
    i = -1
    last = len(hay) - m
    while True:
        try:
            i = hay.index(first, i + 1, last + 1)
        except ValueError:
            return starts
        if hay[i : i + m] == needle:
            starts.append(i)


def _exact(lines: list[str], search: list[str], replace: list[str]) -> list[Span]:
    m = len(search)
    return [Span(i, i + m, tuple(replace)) for i in _find_all(lines, search)]


def _rstripped(lines: list[str], search: list[str], replace: list[str]) -> list[Span] | None:
    needle = [s.rstrip() for s in search]
    if needle == search and not any(x != x.rstrip() for x in lines):
        return None  # nothing differs from the exact rung
    hay = [x.rstrip() for x in lines]
    clean = tuple(r.rstrip() for r in replace)
    return [Span(i, i + len(needle), clean) for i in _find_all(hay, needle)]


def trim_blank_edges(search: list[str], replace: list[str]) -> tuple[list[str], list[str]]:
    """Drop blank lines at the ends of SEARCH, and as many at the same ends of REPLACE."""
    lead = _count_blank(search)
    if lead == len(search):
        return [], replace
    trail = _count_blank(reversed(search))
    search = search[lead : len(search) - trail]
    r_lead = min(lead, _count_blank(replace))
    replace = replace[r_lead:]
    r_trail = min(trail, _count_blank(reversed(replace)))
    return search, replace[: len(replace) - r_trail]


def _count_blank(lines) -> int:
    n = 0
    for line in lines:
        if line.strip():
            break
        n += 1
    return n


def _blank_trimmed(lines: list[str], search: list[str], replace: list[str]) -> list[Span] | None:
    s, r = trim_blank_edges(search, replace)
    if len(s) == len(search) or not s:
        return None
    return _exact(lines, s, r) or _rstripped(lines, s, r)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindented(
    lines: list[str], search: list[str], replace: list[str]
) -> list[Span] | Miss | None:
    search, replace = trim_blank_edges(search, replace)
    body = [s.rstrip() for s in search]
    if not any(body):
        return None
    base = min((_indent(s) for s in body if s), key=len)
    if any(s and not s.startswith(base) for s in body):
        return None  # tabs and spaces mixed inside the SEARCH: no uniform shift exists
    hay = [x.strip() for x in lines]
    needle = [s.strip() for s in body]
    spans = []
    for i in _find_all(hay, needle):
        target = _shift_target(lines[i : i + len(body)], body, base)
        if target is None:
            continue
        new = _reindent(replace, base, target)
        if new is None:
            return Miss(
                reason=f"the SEARCH matches line {i + 1} only with different indentation, and "
                "the REPLACE cannot be re-indented to match; copy the file's indentation."
            )
        spans.append(Span(i, i + len(body), new))
    return spans


def _shift_target(window: list[str], body: list[str], base: str) -> str | None:
    """The file's indentation for the SEARCH's least-indented lines, if the shift is uniform."""
    target = None
    for have, want in zip(window, body, strict=True):
        if not want:
            continue
        if _indent(want) == base:
            target = _indent(have)
            break
    if target is None:
        return None
    for have, want in zip(window, body, strict=True):
        if have.rstrip() != (target + want[len(base) :] if want else ""):
            return None
    return target


def _reindent(replace: list[str], base: str, target: str) -> tuple[str, ...] | None:
    same_char = len(set(base + target)) <= 1
    out = []
    for line in replace:
        line = line.rstrip()
        if not line:
            out.append("")
        elif line.startswith(base):
            out.append(target + line[len(base) :])
        elif same_char and set(_indent(line)) <= set(base + target or " "):
            # Less indented than the SEARCH (e.g. a dedented `else:`): shift by the same amount.
            width = len(_indent(line)) + len(target) - len(base)
            if width < 0:
                return None
            out.append((target or base)[:1] * width + line.lstrip())
        else:
            return None
    return tuple(out)


def _retabbed(lines: list[str], search: list[str], replace: list[str]) -> list[Span] | Miss | None:
    """Tabs in the file, spaces in the reply (or the reverse): models often convert them.

    Indentation is compared by width (tab stops of 4, 8 or 2); the shift must be uniform,
    and the replacement is indented in the file's style.
    """
    search, replace = trim_blank_edges(search, replace)
    body = [s.rstrip() for s in search]
    if not any(body):
        return None
    hay = [x.strip() for x in lines]
    spans = []
    for i in _find_all(hay, [s.strip() for s in body]):
        window = [x.rstrip() for x in lines[i : i + len(body)]]
        if not any("\t" in _indent(x) for x in window + body):
            continue  # no tabs involved: the reindent rung has already decided
        fitted = next(
            (
                (size, d)
                for size in (4, 8, 2)
                if (d := _width_shift(window, body, size)) is not None
            ),
            None,
        )
        if fitted is None:
            continue
        size, shift = fitted
        indents = [_indent(x) for x in window if _indent(x)]
        use_tabs = sum(x.startswith("\t") for x in indents) * 2 >= len(indents) > 0
        new = _rewidth(replace, size, shift, use_tabs)
        if new is None:
            return Miss(reason=f"the REPLACE cannot be re-indented to match line {i + 1}.")
        spans.append(Span(i, i + len(body), new))
    return spans


def _width(indent: str, size: int) -> int:
    return len(indent.expandtabs(size))


def _width_shift(window: list[str], body: list[str], size: int) -> int | None:
    shifts = {
        _width(_indent(have), size) - _width(_indent(want), size)
        for have, want in zip(window, body, strict=True)
        if want
    }
    return shifts.pop() if len(shifts) == 1 else None


def _rewidth(replace: list[str], size: int, shift: int, use_tabs: bool) -> tuple[str, ...] | None:
    out = []
    for line in replace:
        text = line.strip()
        width = _width(_indent(line), size) + shift
        if text and width < 0:
            return None
        indent = "\t" * (width // size) + " " * (width % size) if use_tabs else " " * width
        out.append(indent + text if text else "")
    return tuple(out)


NUMBERED = re.compile(r"^\s*\d+ \| ?")


def _unnumbered(
    lines: list[str], search: list[str], replace: list[str]
) -> list[Span] | Miss | None:
    """Lines copied from our own feedback, `12 | code`, with the numbers still on."""
    if not all(NUMBERED.match(s) for s in search if s.strip()):
        return None
    search = [NUMBERED.sub("", s, count=1) for s in search]
    if all(NUMBERED.match(r) for r in replace if r.strip()):
        replace = [NUMBERED.sub("", r, count=1) for r in replace]
    for rung in (_exact, _rstripped, _blank_trimmed, _reindented, _retabbed):
        found = rung(lines, search, replace)
        if found:
            return found
    return None


def _split_elided(lines: list[str]) -> list[list[str]]:
    pieces: list[list[str]] = [[]]
    for line in lines:
        if ELISION.match(line):
            pieces.append([])
        else:
            pieces[-1].append(line)
    return pieces


def _elided(lines: list[str], search: list[str], replace: list[str]) -> list[Span] | Miss:
    """`...` lines: each SEARCH piece is located alone, in order; the gaps stay as they are."""
    s_pieces, r_pieces = _split_elided(search), _split_elided(replace)
    if len(s_pieces) == 1:
        return Miss()
    if len(s_pieces) != len(r_pieces):
        return Miss(
            reason=f"the SEARCH has {_dots(len(s_pieces) - 1)} but the REPLACE has "
            f"{_dots(len(r_pieces) - 1)}; use the same `...` lines in both, or none."
        )
    spans: list[Span] = []
    after = 0
    for s, r in zip(s_pieces, r_pieces, strict=True):
        if not any(x.strip() for x in s):
            if any(x.strip() for x in r):
                return Miss(reason="text next to a `...` line must have SEARCH lines to anchor it.")
            continue
        found = locate(lines, s, r)
        if isinstance(found, Miss):
            return found if found.ambiguous else Miss()
        span = found[0]
        if span.start < after:
            return Miss(reason="the parts of the SEARCH between `...` lines are out of order.")
        spans.append(span)
        after = span.end
    return spans or Miss()


def _dots(n: int) -> str:
    return f"{n} `...` line" + ("" if n == 1 else "s")
