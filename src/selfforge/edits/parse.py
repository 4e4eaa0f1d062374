"""Read a model's reply into edits: format detection and SEARCH/REPLACE blocks.

Models decorate file names (`**calc.py**`, `` `calc.py` ``, `# calc.py`, `calc.py:`),
put them inside or outside code fences, vary the marker length and send CRLF. All of
that is accepted here; what cannot be read becomes an ``Edit`` with ``error`` set, so
it is reported instead of silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import replace

from selfforge.edits.records import FORMATS, Edit

MASK = "\x00claimed\x00"  # stands in for lines another format already parsed
HEAD = re.compile(r"^\s*<{5,9}\s*SEARCH\b.*$")
DIVIDER = re.compile(r"^\s*={5,9}\s*$")
UPDATED = re.compile(r"^\s*>{5,9}\s*(?:REPLACE|UPDATED)\b.*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*?)\s*$")
HUNK = re.compile(r"^@@.*$", re.MULTILINE)
DIFF_HEADER = re.compile(r"^--- \S.*\n\+\+\+ \S", re.MULTILINE)
PATHLIKE = re.compile(r"^[\w.\-/+@~\\]+$")
EXTENSIONLESS = {"Makefile", "Dockerfile", "LICENSE", "Procfile", "Gemfile", "Rakefile"}


def parse_edits(response: str, fmt: str = "auto") -> list[Edit]:
    """All edits in a reply, numbered from 1 in the order they appear.

    Every format is read and the blocks combined, so a reply mixing SEARCH/REPLACE
    blocks with, say, a new whole file loses nothing, and a model that ignores the
    format it was asked for (``fmt``) still gets its edits applied. The asked-for format
    reads first; lines it claims are masked before the next looks, so a fence wrapping
    SEARCH/REPLACE blocks is never taken for a whole file.
    """
    from selfforge.edits.searchreplace import parse_search_replace
    from selfforge.edits.udiff import parse_udiff
    from selfforge.edits.wholefile import parse_whole_file

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


def clean_path(line: str, prose: bool = True) -> str | None:
    """The file path a decorated line names, or None when the line is prose or code.

    With ``prose``, a sentence naming exactly one `backticked` path counts too.
    """
    s = re.sub(r"^\s*(?:\d+[.)]\s+)?", "", line)
    s = s.strip().lstrip("#*`'\"> -").strip()
    s = re.sub(r"^(?:file(?:name)?|path)\s*[:=]\s*", "", s, flags=re.IGNORECASE)
    s = s.lstrip("*`'\" ").rstrip(":*`'\", ").strip()
    s = re.sub(r"(?:\s+\(.*\)|\s+[-–—].*|:\s.*)$", "", s)  # `calc.py (new)`, `calc.py: fix`
    s = s.rstrip(":*`'\", ").strip()
    if not s or not PATHLIKE.match(s) or s.endswith("."):
        return _path_in_backticks(line) if prose else None
    s = s.replace("\\", "/")
    while s.startswith("./"):
        s = s[2:]
    base = s.rsplit("/", 1)[-1]
    if not base or s.endswith("/"):
        return None
    if "." in base.strip(".") or "/" in s or base in EXTENSIONLESS or base.startswith("."):
        return s
    return None


def _path_in_backticks(line: str) -> str | None:
    """`Update `calc.py`:`-style prose: exactly one backticked path-like token."""
    tokens = [t for t in re.findall(r"`([^`\s]+)`", line) if "." in t or "/" in t]
    if len(tokens) != 1 or "`" in tokens[0]:
        return None
    return clean_path(tokens[0]) if PATHLIKE.match(tokens[0]) else None


def path_from_fence_info(info: str) -> str | None:
    """A path on the fence line itself: ```calc.py, ```python calc.py, ```py title="calc.py"."""
    for token in reversed(re.split(r"[\s:=]+", info)):
        if token and ("." in token or "/" in token):
            found = clean_path(token)
            if found:
                return found
    return None


def path_before(lines: list[str], i: int, prose: bool = True) -> str | None:
    """The path named just above line i (blank and fence lines skipped), if any.

    A fence line may itself carry the path. ``prose`` as for ``clean_path``.
    """
    j = i - 1
    while j >= 0:
        line = lines[j]
        fence = FENCE.match(line)
        if fence:
            named = path_from_fence_info(fence.group(2))
            if named:
                return named
        elif line.strip():
            if UPDATED.match(line) or DIVIDER.match(line) or HEAD.match(line):
                return None
            return clean_path(line, prose)
        j -= 1
    return None
