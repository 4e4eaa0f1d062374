"""Whole-file blocks: a path, then a fenced block with the file's complete new content.

Small models do better rewriting a file than quoting it exactly, but they get lazy:
they drop most of the file or write `# ... rest of the code unchanged`. Such rewrites
are refused with the reason, because applying them would delete real code.
"""

from __future__ import annotations

import re

from selfforge.edits.markers import FENCE, HEAD, MASK, UPDATED, path_before, path_from_fence_info
from selfforge.edits.records import Edit

# A placeholder is a comment (or a bare `...` line) standing in for code, e.g.
# `# ... rest of the code unchanged`, `// existing methods here`, `/* ... */`.
COMMENT_LEAD = re.compile(r"^(?:#+|//+|/\*+|<!--|--|\*)\s*")
STAND_IN = re.compile(
    r"(?:(?:the\s+)?rest\s+of|remaining|existing|unchanged|other|previous|same\s+as)\b"
    r".{0,60}?\b(?:code|file|functions?|methods?|lines?|content|implementation|"
    r"unchanged|as\s+before|here|above|below)\b",
    re.IGNORECASE,
)
HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc", ".diff", ".patch")
MIN_LINES_FOR_SHRINK_GUARD = 10  # tiny files are legitimately rewritten from scratch
KEEP_FRACTION = 0.5  # a rewrite shorter than this share of the old file looks lazy


def parse_whole_file(lines: list[str]) -> list[Edit]:
    edits: list[Edit] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        marker, info = fence.group(1), fence.group(2)
        end = _closing_fence(lines, i + 1, marker)
        # Only a line that is just a path counts: prose naming a file usually precedes
        # an excerpt, and an excerpt taken as the whole file would delete the rest.
        path = path_from_fence_info(info) or path_before(lines, i, prose=False)
        stop = end + 1 if end is not None else len(lines)
        if path is None or MASK in lines[i:stop]:
            i = stop  # an illustration, or a fence around blocks of another format
            continue
        if end is None:
            error = (
                f"the code block for {path} is unterminated: it has no closing {marker} line. "
                "If your reply was cut off, send fewer files or split the change."
            )
            raw = "\n".join(lines[i:])
            edits.append(Edit(0, path, "whole_file", error=error, raw=raw, span=(i, stop)))
            break
        raw = f"{path}\n" + "\n".join(lines[i:stop])
        body = tuple(lines[i + 1 : end])
        if not is_doc(path) and _other_format(list(body), set()):
            i = stop  # SEARCH/REPLACE blocks or a diff in a fence: theirs to read
            continue
        edits.append(Edit(0, path, "whole_file", replace=body, raw=raw, span=(i, stop)))
        i = stop
    return edits


def _closing_fence(lines: list[str], start: int, marker: str) -> int | None:
    """The line closing the block; ```lang lines inside open nested blocks (docs, docstrings)."""
    depth = 0
    for j in range(start, len(lines)):
        fence = FENCE.match(lines[j])
        if not fence or fence.group(1)[0] != marker[0] or len(fence.group(1)) < len(marker):
            continue
        if fence.group(2):
            depth += 1
        elif depth:
            depth -= 1
        else:
            return j
    return None


def lazy_reason(old: list[str] | None, new: list[str], path: str = "") -> str | None:
    """Why this rewrite looks lazy (and would lose code), or None when it looks whole."""
    old_set = {x.strip() for x in old or ()}
    foreign = None if is_doc(path) else _other_format(new, old_set)
    if foreign:
        return (
            f"the block holds {foreign}, not the file's content; written as it is, the file "
            "would contain them. Send the complete new file content in the block."
        )
    for n, line in enumerate(new, 1):
        if is_placeholder(line) and line.strip() not in old_set:
            return (
                f"line {n} of the new content is a placeholder ({line.strip()!r}), not code. "
                "A whole-file block must contain the complete file; write out every line."
            )
    if old is None:
        return None
    if any(x.strip() for x in old) and not any(x.strip() for x in new):
        return (
            "the block is empty, so the whole file would be erased. Send the complete new "
            "content; to delete the file, use a diff to `+++ /dev/null`."
        )
    old_code = sum(1 for x in old if x.strip())
    new_code = sum(1 for x in new if x.strip())
    if old_code >= MIN_LINES_FOR_SHRINK_GUARD and new_code < old_code * KEEP_FRACTION:
        return (
            f"the new content has {new_code} non-blank lines where the file has {old_code}, "
            "so most of the file would be deleted. Send the complete file, or use "
            "SEARCH/REPLACE blocks to change only part of it."
        )
    return None


def is_placeholder(line: str) -> bool:
    text = line.strip()
    body = COMMENT_LEAD.sub("", text)
    is_comment = body != text
    body = body.removesuffix("*/").removesuffix("-->").strip()
    elided = body.lstrip(".… [(")
    if not (is_comment or elided != body):
        return False  # plain code, even if it says `other = code`
    if not elided.strip(".…)] "):
        # `# ...` or `/* ... */`; a bare `...` is Python's Ellipsis (stubs, protocols),
        # and a bare `#` is just an empty comment.
        return is_comment and ("..." in body or "…" in body)
    return bool(STAND_IN.match(elided))


def _other_format(new: list[str], old_set: set[str]) -> str | None:
    """SEARCH/REPLACE markers or diff hunks inside a whole-file block: a format mix-up."""
    fresh = [x for x in new if x.strip() not in old_set]
    if any(HEAD.match(x) or UPDATED.match(x) for x in fresh):
        return "SEARCH/REPLACE markers"
    if any(HUNK_HEADER.match(x) for x in fresh) and any(x.startswith(("+", "-")) for x in fresh):
        return "a diff"
    return None


def is_doc(path: str) -> bool:
    """Documents may quote SEARCH/REPLACE blocks and diffs; code files never hold them."""
    return path.lower().endswith(DOC_SUFFIXES)
