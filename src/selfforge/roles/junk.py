"""Telling usable model output from junk, so small models cannot steer the loop.

A small model echoes the prompt, repeats itself, answers off topic, or copies the
placeholder path of the instructions. Each check returns the reason a text is junk (for
the journal), or None when the text may be used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from selfforge.edits.markers import FENCE, UPDATED

# Lines of our own prompts a model may parrot back as a "task" or a "lesson".
_PROMPT_ECHOES = (
    "reply with a numbered list",
    "most valuable first",
    "goals, most important first",
    "recent attempts (newest last)",
    "already planned",
    "repository map",
    "if nothing useful is left",
    "one-line lesson",
    "write a lesson",
)
_PLACEHOLDER = re.compile(
    r"(?:^|[\s/`'\"(])(?:path/to/|/path/to/|<[\w .-]*(?:file|path)[\w .-]*>|"
    r"(?:your_?file|file_?name|some_?file)\.\w+)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_STOPWORDS = (
    "this that with from have will should would could there their them then than when "
    "what which were been being into also only more most some such very make made code "
    "attempt attempts task next time change changes lesson the and for not but was are "
    "you its can use all any had has may now our out one two"
)
_STOP = frozenset(_STOPWORDS.split(" "))


def placeholder_path(text: str) -> str | None:
    """The placeholder path (``path/to/file.py``) ``text`` names, if any."""
    found = _PLACEHOLDER.search(text)
    return found.group(0).strip(" `'\"(") if found else None


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def _mostly_noise(text: str) -> bool:
    letters = sum(c.isalpha() for c in text)
    return letters < max(3, len(text.strip()) // 2)


def _echoes_prompt(text: str) -> bool:
    lowered = text.lower()
    return any(echo in lowered for echo in _PROMPT_ECHOES)


def _repeats_itself(text: str) -> bool:
    """The same phrase over and over: the loop a tiny model falls into."""
    words = text.lower().split()
    return len(words) >= 12 and len(set(words)) <= len(words) // 4


def task_junk(text: str) -> str | None:
    """Why a planned task cannot be attempted, or None."""
    if len(text.split()) < 2:
        return "too short to be a task"
    if _mostly_noise(text):
        return "not words"
    if _echoes_prompt(text):
        return "repeats the prompt's instructions"
    if _repeats_itself(text):
        return "repeats itself"
    if (path := placeholder_path(text)) is not None:
        return f"names the placeholder path {path}"
    if text.rstrip().endswith("?"):
        return "a question, not a task"
    return None


def lesson_junk(lesson: str, about: str, earlier: Iterable[str]) -> str | None:
    """Why a lesson should not be kept, or None. ``about``: the reflect prompt (task,
    outcome, reason and diff); ``earlier``: lessons already in the journal."""
    text = " ".join(lesson.split())
    if not text:
        return "the lesson is empty"
    if _mostly_noise(text):
        return "the lesson is not words"
    if _echoes_prompt(text) or _repeats_itself(text):
        return "the lesson repeats the prompt or itself"
    if placeholder_path(text):
        return "the lesson names a placeholder path"
    normalized = text.lower().rstrip(".")
    if any(" ".join(e.split()).lower().rstrip(".") == normalized for e in earlier):
        return "the lesson repeats an earlier one"
    if not _words(text) & _words(about):
        return "the lesson is not about the attempt (no word in common with it)"
    return None


def complete_edits_prefix(reply: str) -> tuple[str, int]:
    """The part of a reply cut at the output limit that ends after its last complete
    edit (a ``>>>>>>> REPLACE`` marker or a closing fence), and how many complete edits
    it holds. ("", 0) when no edit was finished before the cut."""
    lines = reply.splitlines(keepends=True)
    in_fence, end, complete = False, 0, 0
    for i, line in enumerate(lines, start=1):
        if UPDATED.match(line):
            end, complete = i, complete + 1
        elif FENCE.match(line):
            if in_fence:
                end = i
            in_fence = not in_fence
            if not in_fence and end == i:
                complete += 0 if _fence_held_markers(lines[:i]) else 1
    return "".join(lines[:end]), complete


def _fence_held_markers(lines: list[str]) -> bool:
    """Whether the fence just closed wrapped SEARCH/REPLACE blocks (already counted)."""
    for line in reversed(lines[:-1]):
        if FENCE.match(line):
            return False
        if UPDATED.match(line):
            return True
    return False


# A model that misses the edit format this many attempts in a row gets a verdict.
FORMAT_STRIKES = 3
_FORMAT_FAILURES = {
    "no edits in its reply": lambda none, r: none,
    "edits that did not apply": lambda none, r: r.startswith("edits did not apply"),
    "edits to placeholder paths": lambda none, r: "placeholder" in r,
    "replies cut at the output limit": lambda none, r: "cut at" in r,
}


def edit_format_verdict(attempts: list[tuple[bool, str]], spec: str) -> str | None:
    """A verdict when the last FORMAT_STRIKES ``(no edits, reason)`` all missed the
    format: ``no edits``, the attempt ended with no edits proposed."""
    last = attempts[-FORMAT_STRIKES:]
    if len(last) < FORMAT_STRIKES:
        return None
    kinds = []
    for no_edits, reason in last:
        kind = next((k for k, hit in _FORMAT_FAILURES.items() if hit(no_edits, reason)), None)
        if kind is None:
            return None
        kinds.append(kind)
    what = ", ".join(f"{kinds.count(k)}× {k}" for k in dict.fromkeys(kinds))
    return (
        f"{spec} did not produce usable edits in its last {len(last)} attempts ({what}). "
        "Try a larger model (7B+ coder models follow SEARCH/REPLACE), "
        '[model] edit_format = "whole_file" in selfforge.toml, or a higher '
        "max_output_tokens if its replies were cut."
    )
