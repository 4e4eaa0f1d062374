"""What ``check`` makes of the measures (issue 42, point 5): the change's base and its
candidate commit measured after every other gate (so a wall-time measure never shares
the cores with a test run), each change reported as CI tools do, and a measure made
worse applied to the judgement by its ``on_worse``: ``review`` (the default: needs
review, exit 3), ``reject`` or ``report`` (shown, nothing more)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from selfforge.config import Directives, Measure
from selfforge.judge.outcome import Outcome
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.verdict import Judgement
from selfforge.measure import stats
from selfforge.measure.credit import Prover, credited
from selfforge.measure.revisions import sides
from selfforge.measure.sample import Comparison, MeasureError, compare
from selfforge.repo.workspace import Workspace


def measure_change(
    ws: Workspace,
    d: Directives,
    space: CheckSpace,
    base: str,
    candidate: str,
    judgement: Judgement,
    prover: Prover | None = None,
) -> tuple[Judgement, list[Comparison], list[str]]:
    """The declared measures on ``base`` and ``candidate``, and the judgement they leave:
    a measure worse by at least its min_change makes it needs review (or rejected, as
    its on_worse says); one that gives no number on either side is for a person to look
    at. A coverage measure of a change that adds tests is reported credited too
    (measure/credit.py): raised only by lines no added test checks, it needs review.
    Returns the judgement, the comparisons and a line per measure that failed."""
    found: list[Comparison] = []
    failed: list[str] = []
    unchecked: list[str] = []
    a, b = sides(ws, d, base, candidate)
    for m in d.measures:
        try:
            credit = None
            if m.kind == "coverage" and prover is not None and prover.added:
                credit = credited(m, d, a, b, space, prover, ws.root)
            if credit is None:
                found += compare([m], d, a, b, space, ws.root)
                continue
            credit.credited.on_worse = "report"  # its own measure says worse, if it is
            found += [credit.measured, credit.credited]
            if credit.measured.verdict == stats.IMPROVED != credit.credited.verdict:
                unchecked.append(f"measure {credit.credited.describe()}; {credit.note}")
        except MeasureError as exc:
            failed.append(exc.message)
    return apply(judgement, found, failed, unchecked), found, failed


def apply(
    judgement: Judgement, found: list[Comparison], failed: list[str], unchecked: Sequence[str] = ()
) -> Judgement:
    """The judgement with the measures' say: a rejected change stays rejected;
    ``unchecked``: coverage gains no added test checks, for review."""
    if judgement.outcome is Outcome.REJECTED:
        return judgement
    worse = [c for c in found if c.verdict == stats.WORSE]
    rejecting = [c for c in worse if c.on_worse == "reject"]
    if rejecting:
        reason = "; ".join(f"measure {c.describe()}" for c in rejecting)
        return replace(judgement, outcome=Outcome.REJECTED, reason=reason, feedback=reason)
    review = [f"measure {c.describe()}" for c in worse if c.on_worse == "review"]
    review += [f"measure could not be read: {line}" for line in failed] + list(unchecked)
    if not review:
        return judgement
    items = [*judgement.review, *review]
    reason = "needs review: " + "; ".join(items[:3])
    return replace(judgement, outcome=Outcome.NEEDS_REVIEW, reason=reason, review=items)


def heldout(m: Measure) -> list[Measure]:
    """``m`` on each of its held-out variations: its variables set at measuring time
    only (``random``: a number drawn now, never written anywhere the proposer reads)."""
    found = []
    for table in m.heldout:
        env = {k: str(secrets.randbelow(10**6)) if v == "random" else v for k, v in table.items()}
        shown = ",".join(f"{k}={'random' if table[k] == 'random' else v}" for k, v in env.items())
        found.append(m.model_copy(update={"name": f"{m.name}[{shown}]", "env": {**m.env, **env}}))
    return found


def judge_goal(
    ws: Workspace,
    d: Directives,
    space: CheckSpace,
    base: str,
    candidate: str,
    judgement: Judgement,
    goal: list[str],
    root: Path | None = None,
    prover: Prover | None = None,
) -> tuple[Judgement, list[Comparison]]:
    """A goal judged by its measures (issue 42, point 3): the candidate lands only if each
    of ``goal``'s measures is improved by at least its min_change, on its held-out
    variations too, and no other declared measure is worse. A measure that gives no
    number refuses it. The reason carries every figure."""
    found: list[Comparison] = []
    a, b = sides(ws, d, base, candidate)
    refusals: list[str] = []
    for m in d.measures:
        runs = [m, *heldout(m)] if m.name in goal else [m]
        for one in runs:
            credit = None  # a coverage goal's: both figures from the same runs
            here = root or ws.root
            try:
                if one is m and m.name in goal and m.kind == "coverage" and prover is not None:
                    credit = credited(m, d, a, b, space, prover, here)  # None: not coverage.py
                [c] = [credit.measured] if credit else compare([one], d, a, b, space, here)
            except MeasureError as exc:
                refusals.append(f"measure could not be read: {exc.message}")
                break
            found.append(c)
            if m.name in goal:  # the goal's measure and its held-out variations
                if c.verdict != stats.IMPROVED:
                    need = f"it must be improved by at least {m.min_change:.0%}"
                    refusals.append(f"goal measure {c.describe()}; {need}")
                    break
                if credit is not None:  # a coverage goal counts only tests that can fail
                    found.append(credit.credited)
                    if credit.credited.verdict != stats.IMPROVED:
                        refusals.append(
                            f"goal measure {credit.credited.describe()}; {credit.note}: a test "
                            "that runs code without checking it adds nothing"
                        )
            elif c.verdict == stats.WORSE:
                refusals.append(f"measure {c.describe()}")
    figures = "; ".join(c.describe() for c in found)
    if refusals:
        reason = "; ".join(refusals)
        feedback = (
            f"{reason}. Measured: {figures}. Make the code itself faster (or better by the "
            "measure) for every input; the measure's files are the base's."
        )
        return replace(judgement, outcome=Outcome.REJECTED, reason=reason, feedback=feedback), found
    return replace(judgement, reason=f"{judgement.reason}; measured: {figures}"), found
