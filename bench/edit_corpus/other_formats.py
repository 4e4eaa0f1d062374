"""Recoverable replies in the other formats: whole files, diffs, and mixes of formats."""

from __future__ import annotations

import difflib
import functools
import random
import re

from edit_corpus.case import Case, modify, sr, text, window
from edit_corpus.source import Source, pick_window


def whole_file(rng, src, n):
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    new = text(lines[:s] + modify(lines[s:e], n) + lines[e:])
    header = rng.choice(
        [f"{src.rel}\n```python\n", f"**{src.rel}**\n```python\n", f"```python {src.rel}\n"]
    )
    return Case("", False, {src.rel: src.text}, f"{header}{new}```\n", {src.rel: new})


def _udiff(rng, src, n, style: str):
    found = window(rng, src)
    if found is None:
        return None
    lines, s, e = found
    new_lines = lines[:s] + modify(lines[s:e], n) + lines[e:]
    diff = list(
        difflib.unified_diff(lines, new_lines, f"a/{src.rel}", f"b/{src.rel}", n=3, lineterm="")
    )
    if style == "offset":
        delta = rng.choice([-40, -7, 3, 25])
        diff = [
            re.sub(r"^@@ -(\d+)", lambda m: f"@@ -{max(1, int(m.group(1)) + delta)}", x)
            for x in diff
        ]
    if style == "bare":
        diff = [f"{src.rel}", "```diff", *diff[2:], "```"]
    if style == "nospace":
        diff = [x.rstrip() for x in diff]
    reply = "\n".join(diff) + "\n"
    if style == "git":
        reply = f"```diff\ndiff --git a/{src.rel} b/{src.rel}\n{reply}```\n"
    return Case("", False, {src.rel: src.text}, reply, {src.rel: text(new_lines)})


def udiff_git(rng, src, n):
    return _udiff(rng, src, n, "git")


def udiff_offset(rng, src, n):
    return _udiff(rng, src, n, "offset")


def udiff_bare(rng, src, n):
    return _udiff(rng, src, n, "bare")


def udiff_nospace(rng, src, n):
    return _udiff(rng, src, n, "nospace")


def mixed_formats(rng, src, n):
    """A SEARCH/REPLACE block, a diff and a new whole file in one reply."""
    lines = src.lines
    first = pick_window(rng, lines, 3)
    if first is None:
        return None
    second = pick_window(rng, lines, 3, avoid=set(range(first - 4, first + 8)))
    if second is None:
        return None
    a, b = sorted([first, second])
    new_lines = lines[:b] + modify(lines[b : b + 3], n + 1) + lines[b + 3 :]
    diff = difflib.unified_diff(
        lines[a + 3 :], new_lines[a + 3 :], f"a/{src.rel}", f"b/{src.rel}", n=2, lineterm=""
    )
    new_lines[a : a + 3] = modify(lines[a : a + 3], n)
    created = f"pkg_{n}/helper.py"
    block = sr(src.rel, lines[a : a + 3], modify(lines[a : a + 3], n))
    reply = (
        f"```python\n{block}```\n\n```diff\n" + "\n".join(diff) + "\n```\n\n"
        f"{created}\n```python\nHELPER = {n}\n```\n"
    )
    expected = {src.rel: text(new_lines), created: f"HELPER = {n}\n"}
    return Case("", False, {src.rel: src.text}, reply, expected)


@functools.cache
def _pool() -> tuple[Source, ...]:
    from edit_corpus.source import load_sources

    return tuple(load_sources(random.Random(1), 60))


def _other_sources(rng, src, count: int) -> list[Source]:
    return rng.sample([x for x in _pool() if x.rel != src.rel], count)


def several_files(rng, src, n):
    """Blocks for two or three files in one reply, as SEARCH/REPLACE or bare hunks."""
    sources = [src, *_other_sources(rng, src, rng.randint(1, 2))]
    as_diff = rng.random() < 0.5
    files, expected, parts = {}, {}, []
    for k, source in enumerate(sources):
        found = window(rng, source)
        if found is None:
            return None
        lines, s, e = found
        new_lines = lines[:s] + modify(lines[s:e], n * 10 + k) + lines[e:]
        files[source.rel], expected[source.rel] = source.text, text(new_lines)
        if as_diff:
            hunks = list(difflib.unified_diff(lines, new_lines, lineterm=""))[2:]
            parts.append(f"{source.rel}\n```diff\n" + "\n".join(hunks) + "\n```\n")
        else:
            parts.append(sr(source.rel, lines[s:e], modify(lines[s:e], n * 10 + k)))
    return Case("", False, files, "\n".join(parts), expected)
