"""Read a model's reply into edits: format detection and SEARCH/REPLACE blocks.

Models decorate file names (`**calc.py**`, `` `calc.py` ``, `# calc.py`, `calc.py:`),
put them inside or outside code fences, vary the marker length and send CRLF. All of
that is accepted here; what cannot be read becomes an ``Edit`` with ``error`` set, so
it is reported instead of silently dropped.
"""

from __future__ import annotations

import re

from selfforge.edits.records import FORMATS, Edit

HEAD = re.compile(r"^\s*<{5,9}\s*SEARCH\b.*$")
DIVIDER = re.compile(r"^\s*={5,9}\s*$")
UPDATED = re.compile(r"^\s*>{5,9}\s*(?:REPLACE|UPDATED)\b.*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*?)\s*$")
HUNK = re.compile(r"^@@.*$", re.MULTILINE)
DIFF_HEADER = re.compile(r"^--- \S.*\n\+\+\+ \S", re.MULTILINE)
PATHLIKE = re.compile(r"^[\w.\-/+@~\\]+$")
EXTENSIONLESS = {"Makefile", "Dockerfile", "LICENSE", "Procfile", "Gemfile", "Rakefile"}


def parse_edits(response: str, fmt: str = "auto") -> list[Edit]:
    """All edits in a reply, numbered from 1 in the order they appear."""
    from selfforge.edits import udiff, wholefile

    if fmt not in (*FORMATS, "auto"):
        raise ValueError(f"unknown edit format {fmt!r}; use one of auto, {', '.join(FORMATS)}")
    text = normalize_reply(response)
    fmt = detect_format(text) if fmt == "auto" else fmt
    if fmt == "search_replace":
        return parse_search_replace(text)
    if fmt == "udiff":
        return udiff.parse_udiff(text)
    return wholefile.parse_whole_file(text)


def normalize_reply(response: str) -> str:
    return response.replace("\r\n", "\n").replace("\r", "\n")


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
    if not s or not PATHLIKE.match(s):
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
    """A path named on the fence line itself: ```calc.py, ```python calc.py, ```python:calc.py."""
    for token in reversed(re.split(r"[\s:]+", info)):
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


def parse_search_replace(text: str) -> list[Edit]:
    lines = text.split("\n")
    edits: list[Edit] = []
    last_path: str | None = None
    i = 0
    while i < len(lines):
        if not HEAD.match(lines[i]):
            i += 1
            continue
        named = path_before(lines, i)
        path = named or last_path
        last_path = path
        edit, i = _read_block(lines, i, len(edits) + 1, path)
        edits.append(edit)
    return edits


def _read_block(lines: list[str], head: int, index: int, path: str | None) -> tuple[Edit, int]:
    """One block starting at its SEARCH marker; returns the edit and the next line to read."""
    sections: list[list[str]] = [[]]
    i = head + 1
    while i < len(lines):
        line = lines[i]
        if HEAD.match(line):
            break
        if UPDATED.match(line) and len(sections) == 2:
            raw = f"{path}\n" + "\n".join(lines[head : i + 1])
            return _block_edit(index, path, sections, raw), i + 1
        if DIVIDER.match(line) and len(sections) == 1:
            sections.append([])
        else:
            sections[-1].append(line)
        i += 1
    missing = (
        "`=======` and `>>>>>>> REPLACE` lines"
        if len(sections) == 1
        else ("`>>>>>>> REPLACE` line")
    )
    message = (
        f"the block is unterminated: it has no {missing}. Every block needs "
        "`<<<<<<< SEARCH`, `=======` and `>>>>>>> REPLACE` lines, in that order."
    )
    raw = "\n".join(lines[head:i])
    return Edit(index, path, "search_replace", error=message, raw=raw), i


def _block_edit(index: int, path: str | None, sections: list[list[str]], raw: str) -> Edit:
    search, replace = sections
    error = (
        None
        if path
        else (
            "the block names no file. Put the file's path alone on the line before "
            "`<<<<<<< SEARCH`."
        )
    )
    return Edit(index, path, "search_replace", tuple(search), tuple(replace), error=error, raw=raw)
