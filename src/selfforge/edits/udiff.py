"""Unified diffs, git-style or bare hunks, applied by content rather than line numbers.

Models get hunk line numbers and counts wrong far more often than the lines themselves,
so each hunk becomes a SEARCH (context and removed lines) and a REPLACE (context and
added lines) and goes through the same matcher, with the same ambiguity rules; a hunk's
stated new start only settles a tie between places its text matches equally well.
"""

from __future__ import annotations

import dataclasses
import re

from selfforge.edits.markers import FENCE, path_before
from selfforge.edits.records import Edit

DEV_NULL = "/dev/null"
GIT_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)")
HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def parse_udiff(lines: list[str]) -> list[Edit]:
    edits: list[Edit] = []
    old_path: str | None = None
    new_path: str | None = None
    in_file = False  # inside the hunks under a `---`/`+++` header
    i = 0
    while i < len(lines):
        line = lines[i]
        git = GIT_HEADER.match(line)
        if git:
            old_path, new_path, in_file = git.group(1), git.group(2), True
        elif _is_file_header(lines, i):
            old_path = _header_path(line[4:])
            new_path = _header_path(lines[i + 1][4:])
            in_file = True
            i += 2
            continue
        elif line.startswith("@@"):
            named = None if in_file else path_before(lines, i)
            if named:  # a bare hunk under its own path line
                old_path = new_path = named
            edit, i = _read_hunk(lines, i, old_path, new_path)
            edits.append(edit)
            continue
        elif line.strip():
            in_file = False  # prose or a fence: the next bare hunk may name another file
        i += 1
    return edits


def _is_file_header(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _header_path(rest: str) -> str:
    """`a/calc.py\t2024-01-01 ...` -> `calc.py`; `/dev/null` stays."""
    path = rest.split("\t")[0].strip().strip('"')
    if path == DEV_NULL:
        return path
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def _read_hunk(
    lines: list[str], head: int, old_path: str | None, new_path: str | None
) -> tuple[Edit, int]:
    search: list[str] = []
    replace: list[str] = []
    pending_blank = 0  # models drop the space of blank context lines; keep them tentatively
    i = head + 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("@@") or _is_file_header(lines, i) or GIT_HEADER.match(line):
            break
        if line == "":
            pending_blank += 1
            i += 1
            continue
        tag = line[0]
        if tag not in " -+\\" or FENCE.match(line):
            break
        if pending_blank:
            search.extend([""] * pending_blank)
            replace.extend([""] * pending_blank)
            pending_blank = 0
        if tag in " -":
            search.append(line[1:])
        if tag in " +":
            replace.append(line[1:])
        i += 1
    edit = _hunk_edit(old_path, new_path, search, replace, lines[head:i], (head, i))
    if (m := HUNK_HEADER.match(lines[head])) and int(m.group(1)) > 0:
        edit = dataclasses.replace(edit, at_line=int(m.group(1)) - 1)
    return edit, i


def _hunk_edit(
    old_path: str | None,
    new_path: str | None,
    search: list[str],
    replace: list[str],
    body: list[str],
    span: tuple[int, int],
) -> Edit:
    header = f"--- a/{old_path}\n+++ b/{new_path}\n"
    raw = header + "\n".join(body)
    if new_path == DEV_NULL:
        return Edit(0, old_path, "udiff", tuple(search), (), delete_file=True, raw=raw, span=span)
    create = old_path == DEV_NULL
    error = None
    if not new_path:
        error = "the hunk names no file. Start the diff with `--- a/PATH` and `+++ b/PATH` lines."
    elif not create and not any(s.strip() for s in search):
        error = (
            "the hunk has no context or removed lines, so there is nothing to locate it by "
            "(line numbers are not trusted). Include about 3 unchanged lines around the change."
        )
    return Edit(
        0,
        new_path,
        "udiff",
        tuple(search),
        tuple(replace),
        create_file=create,
        error=error,
        raw=raw,
        span=span,
    )
