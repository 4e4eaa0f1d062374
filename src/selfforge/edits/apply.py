"""Apply a reply's edits: all in memory first, then every file at once, or none.

Edits run in reply order against in-memory copies of the files, so several blocks for
one file see each other's results. Only when every edit succeeded are the files
written, each through a temporary file and `os.replace`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from selfforge.edits import feedback
from selfforge.edits.files import FileSet, FileState
from selfforge.edits.markers import DIVIDER
from selfforge.edits.match import Miss, Span, apply_spans, locate
from selfforge.edits.parse import detect_format, normalize_reply, parse_edits
from selfforge.edits.records import ApplyResult, Edit, EditFailure
from selfforge.edits.safety import Refused, resolve_target
from selfforge.edits.wholefile import lazy_reason


class EditError(Exception):
    """One edit cannot be applied; ``retry`` when a later edit might make it apply."""

    def __init__(self, message: str, retry: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retry = retry


def apply_response(
    root: Path,
    response: str,
    *,
    protected: Sequence[str] = (),
    fmt: str = "auto",
    dry_run: bool = False,
) -> ApplyResult:
    """Parse the reply and apply every edit atomically; see ``ApplyResult`` for the outcome."""
    root = Path(root)
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a directory; pass the repository to edit")
    edits = parse_edits(response, fmt)
    if not edits:
        # The format to teach: the one asked for, or the primary one.
        return ApplyResult(False, [], [], 0, fmt="search_replace" if fmt == "auto" else fmt)
    shown_fmt = detect_format(normalize_reply(response)) if fmt == "auto" else fmt
    files = FileSet(root)
    errors = _apply_all(files, edits, protected)
    failures = [
        EditFailure(e.index, e.path, errors[e.index].message) for e in edits if e.index in errors
    ]
    fine = [e.index for e in edits if e.index not in errors]
    if failures:
        return ApplyResult(False, [], failures, len(edits), fmt=shown_fmt, fine=fine)
    changed = files.changed()
    if not dry_run:
        files.write()
    return ApplyResult(True, changed, [], len(edits), fmt=shown_fmt, fine=fine)


def _apply_all(files: FileSet, edits: list[Edit], protected: Sequence[str]) -> dict[int, EditError]:
    """Apply in order; retry not-found edits while others make progress (any block order)."""
    errors: dict[int, EditError] = {}
    for edit in edits:
        _try(files, edit, protected, errors)
    progress = True
    while progress and any(err.retry for err in errors.values()):
        progress = False
        for edit in edits:
            err = errors.get(edit.index)
            if err is not None and err.retry and _try(files, edit, protected, errors):
                progress = True
    return errors


def _try(
    files: FileSet, edit: Edit, protected: Sequence[str], errors: dict[int, EditError]
) -> bool:
    try:
        _apply_edit(files, edit, protected)
    except EditError as err:
        errors[edit.index] = err
        return False
    errors.pop(edit.index, None)
    return True


def _apply_edit(files: FileSet, edit: Edit, protected: Sequence[str]) -> None:
    if edit.error:
        raise EditError(edit.error)
    if not edit.path:
        raise EditError("the edit names no file.")
    try:
        target = resolve_target(files.root, edit.path, protected)
    except Refused as refused:
        raise EditError(str(refused)) from None
    try:
        state = files.load(target)
    except OSError as exc:
        raise EditError(f"{edit.path} cannot be read ({exc.strerror or exc}).") from None
    if state.unreadable:
        raise EditError(f"{edit.path} {state.unreadable}.")
    if edit.kind == "whole_file":
        _whole_file(state, edit)
    elif edit.delete_file:
        _delete(state, edit)
    else:
        _search_replace(files, state, edit)


def _whole_file(state: FileState, edit: Edit) -> None:
    reason = lazy_reason(
        state.lines if state.exists else None, list(edit.replace), state.target.rel
    )
    if reason:
        raise EditError(reason)
    state.set_lines(_strip_blank_edges(list(edit.replace), lead=False), final_newline=True)


def _strip_blank_edges(lines: list[str], lead: bool = True) -> list[str]:
    """Blank lines at the ends of new content are fence padding, not content."""
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    while lead and lines and not lines[0].strip():
        lines.pop(0)
    return lines


def _delete(state: FileState, edit: Edit) -> None:
    if not state.exists:
        raise EditError(f"{edit.path} does not exist, so it cannot be deleted.")
    # The removed lines must be the file's: a diff against a file the model misremembers
    # must not delete the real one.
    if any(s.strip() for s in edit.search):
        found = locate(state.lines, list(edit.search), [])
        if isinstance(found, Miss):
            raise EditError(
                f"the diff deletes {edit.path}, but its removed lines are not the file's "
                "current lines. Copy them from the file, or leave the hunk body out."
            )
    state.delete()


def _search_replace(files: FileSet, state: FileState, edit: Edit) -> None:
    search, replace = list(edit.search), list(edit.replace)
    if edit.create_file and state.exists:
        raise EditError(f"{edit.path} already exists; to change it, diff against its content.")
    if not state.exists:
        if any(s.strip() for s in search):
            raise EditError(_missing_file(files, edit.path or ""), retry=True)
        state.set_lines(_strip_blank_edges(replace), final_newline=True)
        return
    if not any(s.strip() for s in search):
        # Empty SEARCH on an existing file appends, as the format promises, unless the
        # model is really re-creating the file, which would duplicate its content.
        if _mostly_present(state.lines, replace):
            raise EditError(
                f"the SEARCH is empty, so this would append to {edit.path}, but most of the "
                "REPLACE lines are already in the file. To change existing lines, put them "
                "in the SEARCH; to append, send only the new lines."
            )
        state.set_lines(state.lines + _strip_blank_edges(replace, lead=False), final_newline=True)
        return
    if edit.other_splits:
        found = _locate_one_split(state.lines, edit)
    else:
        found = locate(state.lines, search, replace, edit.at_line)
    if isinstance(found, Miss):
        raise _miss_error(found, edit.path or "", state, search, replace, files, edit.kind)
    state.set_lines(apply_spans(state.lines, found))


def _locate_one_split(lines: list[str], edit: Edit) -> list[Span] | Miss:
    """A block with several `=======` lines (RST underlines, say): pick the reading.

    A reading counts only if its SEARCH matches. The one taken must have both the
    longest SEARCH and the REPLACE most like its SEARCH (edits are small), and as many
    `=======`-like lines in its SEARCH as in its REPLACE (underlines come in pairs).
    Anything less certain is refused rather than guessed.
    """
    readings = [(edit.search, edit.replace), *edit.other_splits]
    matched = []
    for search, replace in readings:
        if any(s.strip() for s in search):
            found = locate(lines, list(search), list(replace))
            if not isinstance(found, Miss):
                likeness = difflib.SequenceMatcher(None, search, replace).ratio()
                matched.append((len(search), likeness, found, search, replace))
    if not matched:
        return Miss()
    longest = max(matched, key=lambda m: m[0])
    likest = max(matched, key=lambda m: m[1])
    ties = [m for m in matched if m[0] == longest[0] or m[1] == likest[1]]
    if longest is likest and len(ties) == 1 and _dividers(longest[3]) == _dividers(longest[4]):
        return longest[2]
    return Miss(
        reason=f"the block has {len(readings)} `=======` lines, so where SEARCH ends is "
        "unclear. Keep exactly one `=======` line between SEARCH and REPLACE; if the code "
        "itself has such lines, include them in both SEARCH and REPLACE."
    )


def _dividers(lines: tuple[str, ...]) -> int:
    return sum(1 for x in lines if DIVIDER.match(x))


def _miss_error(
    miss: Miss,
    path: str,
    state: FileState,
    search: list[str],
    replace: list[str],
    files: FileSet,
    kind: str,
) -> EditError:
    short = "hunk" if kind == "udiff" else "SEARCH"
    if miss.ambiguous:
        return EditError(feedback.ambiguous(path, list(miss.ambiguous), short))
    if miss.reason:
        return EditError(miss.reason)
    elsewhere = files.find_elsewhere(search, state.target.rel)
    message = feedback.not_found(path, state.lines, search, replace, elsewhere, short)
    return EditError(message, retry=True)


def _missing_file(files: FileSet, path: str) -> str:
    similar = files.same_name(path)
    hint = f" Did you mean {' or '.join(similar)}?" if similar else ""
    return (
        f"{path} does not exist.{hint} To create a new file, use an empty SEARCH section; "
        "to edit an existing one, give its path relative to the repository root."
    )


def _mostly_present(lines: list[str], new: list[str]) -> bool:
    wanted = [x.strip() for x in new if len(x.strip()) > 3]
    have = {x.strip() for x in lines}
    return len(wanted) >= 3 and sum(x in have for x in wanted) * 2 > len(wanted)
