"""SEARCH/REPLACE blocks: a path line, then `<<<<<<< SEARCH`, `=======`, `>>>>>>> REPLACE`.

Marker lines of 5 to 9 characters with stray spaces are accepted. A block without a
path line reuses the previous block's path, as models do for several blocks in a row.
"""

from __future__ import annotations

from selfforge.edits.markers import DIVIDER, HEAD, UPDATED, path_before
from selfforge.edits.records import Edit

CANONICAL_DIVIDER = "======="
CUT_OFF = "If your reply was cut off, send fewer or smaller edits."
FORMAT_HINT = (
    "Every block needs `<<<<<<< SEARCH`, `=======` and `>>>>>>> REPLACE` lines, in that order."
)


def parse_search_replace(lines: list[str]) -> list[Edit]:
    edits: list[Edit] = []
    last_path: str | None = None
    i = 0
    while i < len(lines):
        if not HEAD.match(lines[i]):
            i += 1
            continue
        path = path_before(lines, i) or last_path
        last_path = path
        edit, i = _read_block(lines, i, path)
        edits.append(edit)
    return edits


def _read_block(lines: list[str], head: int, path: str | None) -> tuple[Edit, int]:
    """One block from its SEARCH marker; returns the edit and the next line to read."""
    i = head + 1
    while i < len(lines) and not HEAD.match(lines[i]) and not UPDATED.match(lines[i]):
        i += 1
    body = lines[head + 1 : i]
    if i == len(lines) or HEAD.match(lines[i]):
        return _broken(path, head, i, lines, "`>>>>>>> REPLACE` line"), i
    end = i + 1
    splits = [(tuple(body[:k]), tuple(body[k + 1 :])) for k in _divider_lines(body)]
    if not splits:
        return _broken(path, head, end, lines, "`=======` line"), end
    raw = f"{path}\n" + "\n".join(lines[head:end])
    search, replace = splits[0]
    error = (
        None
        if path
        else (
            "the block names no file. Put the file's path alone on the line before "
            "`<<<<<<< SEARCH`."
        )
    )
    edit = Edit(
        0,
        path,
        "search_replace",
        search,
        replace,
        error=error,
        raw=raw,
        span=(head, end),
        other_splits=tuple(splits[1:]),
    )
    return edit, end


def _divider_lines(body: list[str]) -> list[int]:
    """Where the block may be split: the one canonical `=======` if there is exactly one."""
    candidates = [k for k, line in enumerate(body) if DIVIDER.match(line)]
    canonical = [k for k in candidates if body[k].strip() == CANONICAL_DIVIDER]
    if len(candidates) > 1 and len(canonical) == 1:
        return canonical
    return candidates


def _broken(path: str | None, head: int, end: int, lines: list[str], missing: str) -> Edit:
    message = f"the block is unterminated: it has no {missing}. {FORMAT_HINT}"
    if end >= len(lines):
        message += f" {CUT_OFF}"
    raw = "\n".join(lines[head:end])
    return Edit(0, path, "search_replace", error=message, raw=raw, span=(head, end))
