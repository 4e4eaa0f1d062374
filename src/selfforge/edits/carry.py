"""Carry the fine edits of a failed reply into the repair round.

A failed reply changes nothing, and the model is told to resend only the failed edits;
so the repair reply alone would lose the fine ones. ``carry_over`` gives their text,
to be put in front of the repair reply before it is applied.
"""

from __future__ import annotations

from selfforge.edits.parse import parse_edits
from selfforge.edits.records import ApplyResult


def carry_over(response: str, result: ApplyResult, fmt: str = "auto") -> str:
    """The text of the edits in ``response`` that would have applied (per ``result``)."""
    fine = set(result.fine)
    blocks = [e.raw for e in parse_edits(response, fmt) if e.index in fine and e.raw]
    return "\n\n".join(blocks) + ("\n\n" if blocks else "")
