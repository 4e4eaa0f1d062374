"""What ``check`` makes of the measures (issue 42, point 5): the change's base and its
candidate commit measured after every other gate (so a wall-time measure never shares
the cores with a test run), each change reported as CI tools do, and a measure made
worse applied to the judgement by its ``on_worse``: ``review`` (the default: needs
review, exit 3), ``reject`` or ``report`` (shown, nothing more)."""

from __future__ import annotations

from dataclasses import replace

from selfforge.config import Directives
from selfforge.judge.outcome import Outcome
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.verdict import Judgement
from selfforge.measure import stats
from selfforge.measure.revisions import SLOTS
from selfforge.measure.sample import Comparison, MeasureError, Side, compare
from selfforge.repo.workspace import Workspace


def measure_change(
    ws: Workspace,
    d: Directives,
    space: CheckSpace,
    base: str,
    candidate: str,
    judgement: Judgement,
) -> tuple[Judgement, list[Comparison], list[str]]:
    """The declared measures on ``base`` and ``candidate``, and the judgement they leave:
    a measure worse by at least its min_change makes it needs review (or rejected, as
    its on_worse says); one that gives no number on either side is for a person to look
    at. Returns the judgement, the comparisons and a line per measure that failed."""
    found: list[Comparison] = []
    failed: list[str] = []
    a = Side(base, ws.create_worktree(SLOTS[0], base))
    b = Side(candidate, ws.create_worktree(SLOTS[1], candidate))
    for m in d.measures:
        try:
            found += compare([m], d, a, b, space, ws.root)
        except MeasureError as exc:
            failed.append(exc.message)
    return apply(judgement, found, failed), found, failed


def apply(judgement: Judgement, found: list[Comparison], failed: list[str]) -> Judgement:
    """The judgement with the measures' say: a rejected change stays rejected."""
    if judgement.outcome is Outcome.REJECTED:
        return judgement
    worse = [c for c in found if c.verdict == stats.WORSE]
    rejecting = [c for c in worse if c.on_worse == "reject"]
    if rejecting:
        reason = "; ".join(f"measure {c.describe()}" for c in rejecting)
        return replace(judgement, outcome=Outcome.REJECTED, reason=reason, feedback=reason)
    review = [f"measure {c.describe()}" for c in worse if c.on_worse == "review"]
    review += [f"measure could not be read: {line}" for line in failed]
    if not review:
        return judgement
    items = [*judgement.review, *review]
    reason = "needs review: " + "; ".join(items[:3])
    return replace(judgement, outcome=Outcome.NEEDS_REVIEW, reason=reason, review=items)
