"""Replies that are sloppy in the ways real models are, but whose intent is unambiguous.

Each generator takes a random source and returns a ``Case`` with the files as they
should be afterwards, or None when the source offers no suitable window.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from edit_corpus.case import Case, modify, sr, text, window
from edit_corpus.other_formats import (
    mixed_formats,
    several_files,
    udiff_bare,
    udiff_git,
    udiff_nospace,
    udiff_offset,
    whole_file,
)
from edit_corpus.source import UNDERLINE, Source, pick_window, stripped_count


def _simple(rng: random.Random, src: Source, n: int, shape: Callable) -> Case | None:
    """One block on one file; ``shape`` turns (search, replace) into the reply."""
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    replace = modify(lines[s:e], n)
    expected = text(lines[:s] + replace + lines[e:])
    reply = shape(lines[s:e], replace)
    return Case("", False, {src.rel: src.text}, reply, {src.rel: expected})


NAME_STYLES = [
    "{p}",
    "**{p}**",
    "`{p}`",
    "# {p}",
    "{p}:",
    "./{p}",
    "### `{p}`",
    "File: {p}",
    "**`{p}`**",
    "Path: ./{p}",
]
FENCE_STYLES = [
    "{name}\n```python\n{block}```\n",
    "```python\n{name}\n{block}```\n",
    "```{p}\n{block}```\n",
    "```python {p}\n{block}```\n",
    "I'll update `{p}`:\n\n```python\n{block}```\n",
]


def exact(rng, src, n):
    return _simple(rng, src, n, lambda s, r: sr(src.rel, s, r))


def decorated_name(rng, src, n):
    style = rng.choice(NAME_STYLES)
    return _simple(rng, src, n, lambda s, r: sr(style.format(p=src.rel), s, r))


def fences(rng, src, n):
    style = rng.choice(FENCE_STYLES)

    def shape(s, r):
        block = sr("", s, r).split("\n", 1)[1]
        return style.format(name=src.rel, p=src.rel, block=block)

    return _simple(rng, src, n, shape)


def markers(rng, src, n):
    def shape(s, r):
        reply = sr(src.rel, s, r, marker=rng.randint(5, 9))
        return re.sub(
            r"(SEARCH|=|REPLACE)\n", lambda m: m.group(1) + " " * rng.randint(1, 3) + "\n", reply
        )

    return _simple(rng, src, n, shape)


def crlf_reply(rng, src, n):
    return _simple(rng, src, n, lambda s, r: sr(src.rel, s, r).replace("\n", "\r\n"))


def trailing_ws_reply(rng, src, n):
    def spaced(lines):
        out = [x + " " * rng.randint(0, 2) for x in lines]
        out[0] += " "  # at least one difference, or the exact rung (verbatim REPLACE) applies
        return out

    return _simple(rng, src, n, lambda s, r: sr(src.rel, spaced(s), spaced(r)))


def blank_edges(rng, src, n):
    return _simple(rng, src, n, lambda s, r: sr(src.rel, ["", *s, ""], ["", *r, ""]))


def dedented(rng, src, n):
    """The model quotes an indented block flush left (or shifted right)."""
    found = window(rng, src, min_indent=4)
    if found is None:
        return None
    lines, s, e = found
    replace = modify(lines[s:e], n)
    base = min(len(x) - len(x.lstrip()) for x in lines[s:e] if x.strip())
    shift = rng.choice([-base, -4, 4]) if base >= 4 else 4

    def move(block):
        return [
            (" " * (len(x) - len(x.lstrip()) + shift) + x.lstrip()) if x.strip() else ""
            for x in block
        ]

    expected = text(lines[:s] + replace + lines[e:])
    return Case(
        "",
        False,
        {src.rel: src.text},
        sr(src.rel, move(lines[s:e]), move(replace)),
        {src.rel: expected},
    )


def file_trailing_ws(rng, src, n):
    """The file has trailing spaces the model did not copy."""
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    dirty = list(lines)
    for i in range(s, e):
        if dirty[i].strip():
            dirty[i] += "  "
    replace = modify(lines[s:e], n)
    expected = text(dirty[:s] + replace + dirty[e:])
    return Case(
        "", False, {src.rel: text(dirty)}, sr(src.rel, lines[s:e], replace), {src.rel: expected}
    )


def crlf_file(rng, src, n):
    case = exact(rng, src, n)
    if case is None:
        return None
    case.files = {k: v.replace("\n", "\r\n") for k, v in case.files.items()}
    case.expected = {k: v.replace("\n", "\r\n") for k, v in case.expected.items()}
    return case


def several_blocks(rng, src, n):
    """Two to four blocks for one file, in shuffled order."""
    lines, taken, blocks = src.lines, set(), []
    new = list(lines)
    for k in range(rng.randint(2, 4)):
        size = rng.randint(2, 5)
        start = pick_window(rng, lines, size, avoid=taken)
        if start is None:
            return None
        taken.update(range(start, start + size))
        blocks.append((start, start + size, modify(lines[start : start + size], n * 10 + k)))
    for s, e, replace in sorted(blocks, reverse=True):
        new[s:e] = replace
    rng.shuffle(blocks)
    reply = "\n".join(sr(src.rel, lines[s:e], r) for s, e, r in blocks)
    return Case("", False, {src.rel: src.text}, reply, {src.rel: text(new)})


def create_file(rng, src, n):
    body = src.lines[: rng.randint(5, 30)]
    while body and not body[-1].strip():
        body.pop()  # blank lines at the ends of new content are dropped as padding
    while body and not body[0].strip():
        body.pop(0)
    rel = f"newpkg{n}/sub/created_{n}.py"
    reply = sr(rel, [], body)
    return Case("", False, {src.rel: src.text}, reply, {rel: text(body)})


def append_file(rng, src, n):
    added = ["", "", f"def _sf_added_{n}():", f"    return {n}"]
    reply = sr(src.rel, [], added)
    return Case("", False, {src.rel: src.text}, reply, {src.rel: src.text + text(added)})


def delete_lines(rng, src, n):
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    reply = sr(src.rel, lines[s:e], [])
    return Case("", False, {src.rel: src.text}, reply, {src.rel: text(lines[:s] + lines[e:])})


def elision(rng, src, n):
    """`...` stands for unchanged middle lines in both SEARCH and REPLACE."""
    lines = src.lines
    size = rng.randint(8, 14)
    start = pick_window(rng, lines, size)
    if start is None:
        return None
    w = lines[start : start + size]
    head, tail = w[:2], w[-2:]
    if stripped_count(lines, head) != 1 or stripped_count(lines, tail) != 1:
        return None
    indent = " " * (len(w[2]) - len(w[2].lstrip()))
    dots = rng.choice(["...", "# ...", "# ... existing code ..."])
    new_head = modify(head, n)
    new_tail = [*tail[:-1], tail[-1] + "  # sf-tail"]
    reply = sr(src.rel, [*head, indent + dots, *tail], [*new_head, indent + dots, *new_tail])
    expected = text(lines[:start] + new_head + w[2:-2] + new_tail + lines[start + size :])
    return Case("", False, {src.rel: src.text}, reply, {src.rel: expected})


def combo(rng, src, n):
    """Everything at once: decorated name, CRLF, trailing spaces, shifted indent, blank edges."""
    case = dedented(rng, src, n)
    if case is None:
        return None
    reply = case.reply.split("\n", 1)[1]
    reply = reply.replace("SEARCH\n", "SEARCH\n\n").replace("\n=======\n", "\n  \n=======   \n")
    reply = f"**`./{src.rel}`**\n```python\n{reply}```\n"
    case.reply = reply.replace("\n", "\r\n")
    return case


def underline_in_code(rng, src, n):
    """A docstring heading underlined with `=====`, inside the edited lines."""
    lines = src.lines
    spots = [i for i, x in enumerate(lines) if UNDERLINE.match(x)]
    for _ in range(20):
        at = rng.choice(spots)
        s = at - rng.randint(1, 2)
        e = at + rng.randint(2, 3)
        w = lines[s:e]
        if s < 0 or not w[0].strip() or not w[-1].strip() or UNDERLINE.match(w[-1]):
            continue
        if stripped_count(lines, w) == 1:
            expected = text(lines[:s] + modify(w, n) + lines[e:])
            reply = sr(src.rel, w, modify(w, n))
            return Case("", False, {src.rel: src.text}, reply, {src.rel: expected})
    return None


def numbered_lines(rng, src, n):
    """SEARCH lines copied from a repair message with their `  12 | ` numbers still on."""
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    width = len(str(e))
    search = [f"{i + 1:>{width}} | {lines[i]}" for i in range(s, e)]
    replace = modify(lines[s:e], n)
    expected = text(lines[:s] + replace + lines[e:])
    return Case("", False, {src.rel: src.text}, sr(src.rel, search, replace), {src.rel: expected})


def chatty_reply(rng, src, n):
    """Prose around the blocks, `~~~` fences, a backslash path, later blocks without a path."""
    lines, taken, blocks = src.lines, set(), []
    new = list(lines)
    for k in range(rng.randint(2, 3)):
        size = rng.randint(2, 5)
        start = pick_window(rng, lines, size, avoid=taken)
        if start is None:
            return None
        taken.update(range(start, start + size))
        blocks.append((start, start + size, modify(lines[start : start + size], n * 10 + k)))
    for s, e, replace in sorted(blocks, reverse=True):
        new[s:e] = replace
    name = src.rel.replace("/", "\\") if rng.random() < 0.5 else f"# {src.rel}"
    parts = [f"I found the problem. Here are the changes to `{src.rel}`:\n\n~~~python\n{name}"]
    for k, (s, e, r) in enumerate(blocks):
        body = sr("", lines[s:e], r).split("\n", 1)[1]
        if k:
            parts.append("~~~\n\nNext, the second part:\n\n~~~python")
        parts.append(body.rstrip("\n"))
    parts.append("~~~\n\nThis keeps the behaviour and fixes the bug.\n")
    return Case("", False, {src.rel: src.text}, "\n".join(parts), {src.rel: text(new)})


def _tabbed(lines: list[str]) -> list[str]:
    out = []
    for x in lines:
        width = len(x) - len(x.lstrip(" "))
        out.append("\t" * (width // 4) + " " * (width % 4) + x[width:])
    return out


def tabs_to_spaces(rng, src, n):
    """The file is indented with tabs; the model quotes it with spaces."""
    found = window(rng, src, min_indent=4)
    if found is None:
        return None
    lines, s, e = found
    replace = modify(lines[s:e], n)
    expected = text(_tabbed(lines[:s] + replace + lines[e:]))
    reply = sr(src.rel, lines[s:e], replace)
    return Case("", False, {src.rel: text(_tabbed(lines))}, reply, {src.rel: expected})


RECOVERABLE = {
    f.__name__: f
    for f in (
        exact,
        decorated_name,
        fences,
        markers,
        crlf_reply,
        trailing_ws_reply,
        blank_edges,
        dedented,
        file_trailing_ws,
        crlf_file,
        several_blocks,
        create_file,
        append_file,
        delete_lines,
        elision,
        whole_file,
        udiff_git,
        udiff_offset,
        udiff_bare,
        udiff_nospace,
        combo,
        mixed_formats,
        underline_in_code,
        numbered_lines,
        chatty_reply,
        tabs_to_spaces,
        several_files,
    )
}
