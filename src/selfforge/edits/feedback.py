"""Messages written for the model: why an edit failed and what the file really holds.

Every text here is read by a model in a repair round, so each one names the block, the
cause and the nearest real lines (with line numbers) and says what to send instead.
"""

from __future__ import annotations

import difflib

from selfforge.edits.formats import format_instructions

MAX_SHOWN = 12  # lines of the file quoted back; more wastes the model's context


def no_edits(fmt: str) -> str:
    return (
        "No edits were found in your reply, so nothing was changed.\n"
        "Write every change in this format:\n\n" + format_instructions(fmt)
    )


def summarize(failures: list[tuple[int, str | None, str]], n_edits: int) -> str:
    """All failure messages, then what to resend."""
    parts = [_one_failure(index, path, message) for index, path, message in failures]
    n_fine = n_edits - len(failures)
    if len(failures) == 1:
        tail = "resend only this one."
    else:
        tail = f"resend only these {len(failures)}, corrected."
    if n_fine == 1:
        parts.append(f"The other edit was fine; {tail}")
    elif n_fine > 1:
        parts.append(f"The other {n_fine} edits were fine; {tail}")
    else:
        parts.append("No file was changed; resend corrected edits.")
    return "\n\n".join(parts)


def _one_failure(index: int, path: str | None, message: str) -> str:
    where = f" ({path})" if path else ""
    return f"Edit {index}{where} failed: {message}"


def numbered(lines: list[str], start: int, end: int) -> str:
    """Lines [start, end) of a file as `  12 | text`, 1-based numbers."""
    end = min(end, len(lines), start + MAX_SHOWN)
    width = len(str(end))
    return "\n".join(f"{i + 1:>{width}} | {lines[i]}" for i in range(start, end))


def _long(short: str) -> str:
    return "SEARCH text" if short == "SEARCH" else "hunk's old text (its context and `-` lines)"


def ambiguous(path: str, starts: list[int], short: str = "SEARCH") -> str:
    shown = ", ".join(str(s + 1) for s in starts[:8])
    more = f" and {len(starts) - 8} more" if len(starts) > 8 else ""
    return (
        f"the {_long(short)} matches {len(starts)} places in {path} (lines {shown}{more}), "
        "so it is unclear which one to change. Add a few more unchanged lines around the "
        f"change so the {short} matches exactly one place."
    )


def not_found(
    path: str,
    file_lines: list[str],
    search: list[str],
    replace: list[str],
    elsewhere: tuple[str, int] | None = None,
    short: str = "SEARCH",
) -> str:
    head = f"the {_long(short)} was not found in {path}."
    if elsewhere is not None:
        other, line = elsewhere
        return (
            f"{head} It is in {other} (line {line}); if that is the file you mean, name it instead."
        )
    if _contains(file_lines, replace):
        new_text = "REPLACE text" if short == "SEARCH" else "hunk's new text"
        return (
            f"{head} The {new_text} is already in the file, so this edit may already have "
            "been made; if so, drop it."
        )
    window = most_similar(file_lines, search)
    if window is None:
        return (
            f"{head} No similar lines exist in the file; check the file path and copy the "
            f"{short} lines exactly from the current file."
        )
    start, end = window
    return (
        f"{head} The most similar lines in the file are:\n"
        f"{numbered(file_lines, start, end)}\n"
        f"{_first_difference(file_lines, start, search, short)}"
        f"The {short} must copy the file's current lines exactly (indentation, comments, "
        "blank lines), without the line numbers shown here."
    )


def _contains(file_lines: list[str], lines: list[str]) -> bool:
    needle = [x.strip() for x in lines if x.strip()]
    if len(needle) < 2:
        return False  # one common line proves nothing
    hay = [x.strip() for x in file_lines if x.strip()]
    first = needle[0]
    return any(
        hay[i] == first and hay[i : i + len(needle)] == needle
        for i in range(len(hay) - len(needle) + 1)
    )


def most_similar(file_lines: list[str], search: list[str]) -> tuple[int, int] | None:
    """The window of the file that shares the most lines with the SEARCH, or None."""
    wanted = [s.strip() for s in search]
    if not file_lines or not any(wanted):
        return None
    hay = [x.strip() for x in file_lines]
    m = len(wanted)
    best, best_start = 0, -1
    positions: dict[str, list[int]] = {}
    for i, line in enumerate(hay):
        if line:
            positions.setdefault(line, []).append(i)
    # Votes: each shared non-blank line votes for the window start that would align it.
    votes: dict[int, int] = {}
    for j, line in enumerate(wanted):
        for i in positions.get(line, ())[:200]:
            votes[i - j] = votes.get(i - j, 0) + 1
    for start, score in votes.items():
        if score > best:
            best, best_start = score, start
    if best_start == -1 or best < 1:
        best_start = _fuzzy_anchor(hay, wanted)
        if best_start is None:
            return None
    start = max(0, best_start)
    return start, min(len(file_lines), start + max(m, 1))


def _fuzzy_anchor(hay: list[str], wanted: list[str]) -> int | None:
    """Where the longest SEARCH line most resembles a file line (typos, renamed names)."""
    candidates = sorted((s for s in wanted if s), key=len, reverse=True)[:3]
    unique = list(dict.fromkeys(x for x in hay if x))
    for line in candidates:
        close = difflib.get_close_matches(line, unique, n=1, cutoff=0.6)
        if close:
            return hay.index(close[0]) - wanted.index(line)
    return None


def _first_difference(file_lines: list[str], start: int, search: list[str], short: str) -> str:
    for j, want in enumerate(search):
        i = start + j
        if i >= len(file_lines):
            return f"Your {short} runs past the end of the file at its line {j + 1}.\n"
        if file_lines[i] != want:
            return (
                f"Line {j + 1} of your {short} differs from line {i + 1} of the file:\n"
                f"  {short + ':':<8}{want!r}\n  {'file:':<8}{file_lines[i]!r}\n"
            )
    return ""
