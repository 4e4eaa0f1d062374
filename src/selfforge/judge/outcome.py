"""The one vocabulary of outcomes: ``Outcome``, each word with its exit code and its
rank. Defined here and nowhere else: ``check``, ``run``, the journal's callers, the MCP
tool, ``--json``, the bench and its reports use it (``tests/test_layout.py`` fails on a
second spelling outside ``judge/``). Standard library only: the quick commands (``log``)
load it without the judge.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How a change was judged, or how an attempt ended without a judgement; the value
    is what the journal's ``attempts.outcome``, ``log --json`` and ``check --json``'s
    ``verdict`` hold. Listed best first: that order is the one ranking (``rank``).

    The judge decides the first four. ``no_edits`` (the model proposed nothing, so
    nothing was judged) and ``error`` (the attempt was stopped by an error, or the run
    died with it open) are the run's, kept here all the same: they share the journal's
    column, its ``--outcome`` filter and the dashboard with the judge's, and one
    vocabulary cannot drift apart from itself.
    """

    ACCEPTED = "accepted"
    NEEDS_REVIEW = "needs_review"  # every gate passed; a person must look at what it lists
    REJECTED = "rejected"
    NO_EDITS = "no_edits"
    COULD_NOT_JUDGE = "could_not_judge"  # the base builds nothing, nor does the change
    ERROR = "error"

    @property
    def exit_code(self) -> int:
        """``selfforge check``'s exit code for this outcome: 0 accepted, 1 rejected, 2
        could not judge (and an error), 3 needs review."""
        return _EXIT_CODES[self]

    @property
    def rank(self) -> int:
        """0 for the best outcome (accepted), then in the order listed."""
        return list(Outcome).index(self)

    @property
    def journaled(self) -> Outcome:
        """What the journal's ``attempts.outcome`` holds for it: could not judge is an
        error there (the attempt ended without a verdict), the rest themselves."""
        return Outcome.ERROR if self is Outcome.COULD_NOT_JUDGE else self

    @property
    def tone(self) -> str:
        """What the outcome is to a person, for its colour: ``good`` (accepted),
        ``unsure`` (needs review, no edits) or ``bad`` (the rest)."""
        if self is Outcome.ACCEPTED:
            return "good"
        return "unsure" if self in (Outcome.NEEDS_REVIEW, Outcome.NO_EDITS) else "bad"

    @property
    def shown(self) -> str:
        """The words a person reads: ``needs review``, ``could not judge``."""
        return self.value.replace("_", " ")

    @classmethod
    def of_exit_code(cls, code: int) -> Outcome:
        """The verdict a ``selfforge check`` exit code stands for; any code but 0, 1 and
        3 is ``could_not_judge``."""
        verdicts = (cls.ACCEPTED, cls.REJECTED, cls.NEEDS_REVIEW)
        return next((o for o in verdicts if o.exit_code == code), cls.COULD_NOT_JUDGE)


# What the journal's attempts.outcome may hold, in the order `log --outcome` and the
# dashboard's filter list them: the run's, then a check's needs_review. A listing, not a
# ranking (that is Outcome.rank).
JOURNALED = (
    Outcome.ACCEPTED,
    Outcome.REJECTED,
    Outcome.NO_EDITS,
    Outcome.ERROR,
    Outcome.NEEDS_REVIEW,
)

_EXIT_CODES = {
    Outcome.ACCEPTED: 0,
    Outcome.NEEDS_REVIEW: 3,
    Outcome.REJECTED: 1,
    Outcome.NO_EDITS: 1,
    Outcome.COULD_NOT_JUDGE: 2,
    Outcome.ERROR: 2,
}
