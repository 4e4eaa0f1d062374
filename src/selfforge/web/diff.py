"""A unified diff as side-by-side rows, each side syntax-highlighted by Pygments.

Each hunk's old and new text is highlighted as a whole (so a string or docstring that
spans lines keeps its colour) and then cut back into lines. Pygments escapes the text;
nothing from the diff reaches the page unescaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

CSS_CLASS = "hl"
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="")


@dataclass
class Side:
    number: int | None = None
    html: Markup = field(default_factory=Markup)
    kind: str = "empty"  # "ctx", "del", "add" or "empty"


@dataclass
class DiffRow:
    left: Side
    right: Side
    header: str | None = None  # a hunk's header row instead of code


@dataclass
class FileDiff:
    path: str
    rows: list[DiffRow] = field(default_factory=list)
    added: int = 0
    removed: int = 0


@dataclass
class _Hunk:
    old_start: int
    new_start: int
    header: str
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" "/"-"/"+", text)


def stylesheet() -> str:
    return HtmlFormatter(classprefix="").get_style_defs(f".{CSS_CLASS}")


def side_by_side(diff: str) -> list[FileDiff]:
    files: list[FileDiff] = []
    hunks: list[_Hunk] = []
    path = ""

    def flush() -> None:
        if path and hunks:
            files.append(_render(path, hunks))

    for line in diff.splitlines():
        if line.startswith("diff --git "):
            flush()
            hunks, path = [], line.split(" b/", 1)[-1]
        elif line.startswith("+++ "):
            target = line[4:].strip()
            if target != "/dev/null":
                path = target[2:] if target.startswith("b/") else target
        elif line.startswith("--- ") and not hunks:
            source = line[4:].strip()
            if not path and source != "/dev/null":
                path = source[2:] if source.startswith("a/") else source
        elif match := _HUNK.match(line):
            hunks.append(_Hunk(int(match[1]), int(match[2]), line))
        elif hunks and line[:1] in (" ", "-", "+", ""):
            hunks[-1].lines.append((line[:1] or " ", line[1:]))
    flush()
    return files


def _render(path: str, hunks: list[_Hunk]) -> FileDiff:
    lexer = _lexer(path)
    out = FileDiff(path)
    for hunk in hunks:
        old = [text for mark, text in hunk.lines if mark != "+"]
        new = [text for mark, text in hunk.lines if mark != "-"]
        old_html, new_html = iter(_highlight(old, lexer)), iter(_highlight(new, lexer))
        out.rows.append(DiffRow(Side(), Side(), header=hunk.header))
        old_no, new_no = hunk.old_start, hunk.new_start
        removed: list[Side] = []  # a run of removed lines, paired with the added run after it
        added: list[Side] = []
        for mark, text in [*hunk.lines, (" ", None)]:
            if mark == "-":
                removed.append(Side(old_no, next(old_html), "del"))
                old_no += 1
            elif mark == "+":
                added.append(Side(new_no, next(new_html), "add"))
                new_no += 1
            else:
                out.rows.extend(_pairs(removed, added))
                out.removed, out.added = out.removed + len(removed), out.added + len(added)
                removed, added = [], []
                if text is None:  # the sentinel that flushes the last run
                    break
                left, right = (
                    Side(old_no, next(old_html), "ctx"),
                    Side(new_no, next(new_html), "ctx"),
                )
                out.rows.append(DiffRow(left, right))
                old_no, new_no = old_no + 1, new_no + 1
    return out


def _pairs(removed: list[Side], added: list[Side]) -> list[DiffRow]:
    return [
        DiffRow(
            removed[i] if i < len(removed) else Side(),
            added[i] if i < len(added) else Side(),
        )
        for i in range(max(len(removed), len(added)))
    ]


def _lexer(path: str) -> Lexer:
    options = {"stripnl": False, "stripall": False, "ensurenl": True}
    try:
        return get_lexer_for_filename(path, **options)
    except ClassNotFound:
        return TextLexer(**options)


def _highlight(lines: list[str], lexer: Lexer) -> list[Markup]:
    """One escaped, highlighted HTML line per input line (plain if the counts disagree)."""
    if not lines:
        return []
    html = highlight("\n".join(lines) + "\n", lexer, _FORMATTER).split("\n")
    if html and html[-1] == "":
        html.pop()
    if len(html) != len(lines):
        return [escape(line) for line in lines]
    return [Markup(line) for line in html]
