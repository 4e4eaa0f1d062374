"""The records the edit engine passes around: parsed edits and apply results."""

from __future__ import annotations

from dataclasses import dataclass, field

from selfforge.edits import feedback


@dataclass(frozen=True)
class Edit:
    """One change asked for by the model, in any of the three formats.

    ``search``/``replace`` are lines without line endings. A whole-file block carries the
    new content in ``replace``; a diff hunk carries context+removed lines in ``search``
    and context+added lines in ``replace``.
    """

    index: int  # 1-based position of the block in the reply
    path: str | None  # as written by the model, decorations removed
    kind: str  # one of formats.FORMATS
    search: tuple[str, ...] = ()
    replace: tuple[str, ...] = ()
    create_file: bool = False  # a diff from /dev/null: the file must not exist yet
    delete_file: bool = False  # a diff to /dev/null
    error: str | None = None  # why the block itself could not be read
    raw: str = ""  # the block's text in the reply, so fine edits can be carried over
    span: tuple[int, int] = (0, 0)  # reply lines [start, end) the block occupies
    # Other ways to split a block holding several `=======` lines (e.g. an RST underline
    # in the code): the block applies only if exactly one reading matches the file.
    other_splits: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    # A diff hunk's new-file start (0-based): where its old text sits once the file's
    # earlier hunks are applied. It only settles a tie between places the text matches
    # exactly as well (repeated code); it never moves a hunk the text does not match.
    at_line: int | None = None


@dataclass
class EditFailure:
    index: int  # 1-based number of the edit block in the reply
    path: str | None  # the path the block names, as written
    message: str  # short, actionable, written for the model


@dataclass
class ApplyResult:
    ok: bool  # True only if every edit applied (and at least one edit existed)
    changed: list[str]  # repo-relative POSIX paths created/modified/deleted
    failures: list[EditFailure]
    n_edits: int  # edits parsed from the reply (0 => "no edits found")
    fmt: str = "search_replace"  # format the reply was read as; shapes the no-edits hint
    fine: list[int] = field(default_factory=list)  # indexes of edits that would have applied

    def feedback(self) -> str:
        """The whole message for the model's repair round ("" when everything applied)."""
        if self.n_edits == 0:
            return feedback.no_edits(self.fmt)
        if self.ok:
            return ""
        return feedback.summarize(
            [(f.index, f.path, f.message) for f in self.failures], self.n_edits
        )
