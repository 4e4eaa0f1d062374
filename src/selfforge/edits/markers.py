"""What every edit format's reader shares: the SEARCH/REPLACE and fence markers, the
mask over lines a format already claimed, and the file path a decorated line names
(`**calc.py**`, `` `calc.py` ``, `# calc.py`, `calc.py:`, a fence's info string)."""

from __future__ import annotations

import re

MASK = "\x00claimed\x00"  # stands in for lines another format already parsed
HEAD = re.compile(r"^\s*<{5,9}\s*SEARCH\b.*$")
DIVIDER = re.compile(r"^\s*={5,9}\s*$")
UPDATED = re.compile(r"^\s*>{5,9}\s*(?:REPLACE|UPDATED)\b.*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(.*?)\s*$")
PATHLIKE = re.compile(r"^[\w.\-/+@~\\]+$")
EXTENSIONLESS = {"Makefile", "Dockerfile", "LICENSE", "Procfile", "Gemfile", "Rakefile"}


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
