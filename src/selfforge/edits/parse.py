"""Read a model's reply into edits: format detection and SEARCH/REPLACE blocks.

Models decorate file names (`**calc.py**`, `` `calc.py` ``, `# calc.py`, `calc.py:`),
put them inside or outside code fences, vary the marker length and send CRLF. All of
that is accepted here; what cannot be read becomes an ``Edit`` with ``error`` set, so
it is reported instead of silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import replace

from selfforge.edits.formats import FORMATS
from selfforge.edits.markers import HEAD, MASK
from selfforge.edits.records import Edit
from selfforge.edits.searchreplace import parse_search_replace
from selfforge.edits.udiff import parse_udiff
from selfforge.edits.wholefile import parse_whole_file

HUNK = re.compile(r"^@@.*$", re.MULTILINE)
DIFF_HEADER = re.compile(r"^--- \S.*\n\+\+\+ \S", re.MULTILINE)


def parse_edits(response: str, fmt: str = "auto") -> list[Edit]:
    """All edits in a reply, numbered from 1 in the order they appear.

    Every format is read and the blocks combined, so a reply mixing SEARCH/REPLACE
    blocks with, say, a new whole file loses nothing, and a model that ignores the
    format it was asked for (``fmt``) still gets its edits applied. The asked-for format
    reads first; lines it claims are masked before the next looks, so a fence wrapping
    SEARCH/REPLACE blocks is never taken for a whole file.
    """
    parsers = {
        "search_replace": parse_search_replace,
        "udiff": parse_udiff,
        "whole_file": parse_whole_file,
    }
    if fmt not in (*FORMATS, "auto"):
        raise ValueError(f"unknown edit format {fmt!r}; use one of auto, {', '.join(FORMATS)}")
    order = sorted(parsers, key=lambda name: name != fmt)  # stable: the rest keep their order
    lines = normalize_reply(response).split("\n")
    edits: list[Edit] = []
    for name in order:
        found = parsers[name](lines)
        edits.extend(found)
        lines = _masked(lines, found)
    return _numbered(sorted(edits, key=lambda e: e.span))


def _masked(lines: list[str], edits: list[Edit]) -> list[str]:
    out = list(lines)
    for edit in edits:
        start, end = edit.span
        out[start:end] = [MASK] * (end - start)
    return out


def _numbered(edits: list[Edit]) -> list[Edit]:
    return [replace(e, index=n) for n, e in enumerate(edits, 1)]


def normalize_reply(response: str) -> str:
    return response.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def detect_format(text: str) -> str:
    """SEARCH markers win, then diff hunks, then fenced whole files."""
    lines = text.split("\n")
    if any(HEAD.match(x) for x in lines):
        return "search_replace"
    if HUNK.search(text) or DIFF_HEADER.search(text):
        return "udiff"
    return "whole_file"
