"""How the judge decides a change's outcome (``Outcome``) from what its stages said:
``decide``, called by ``stages.run_pipeline`` with the last stage's verdict. The rules of
a verdict live here: a refusal rejects; a base of which nothing builds, left so by the
change, cannot be judged (``check`` exits 2); what a person must look at makes it needs
review; else accepted."""

from __future__ import annotations

from selfforge.judge import broken_base
from selfforge.judge.candidate import Candidate, Judge
from selfforge.judge.stage_log import CheckRecord
from selfforge.judge.verdict import PASS, WHOLE_SUITE_PASSES, Judgement, Outcome, Verdict


def decide(c: Candidate, j: Judge, last: Verdict, checks: list[CheckRecord]) -> Judgement:
    """The judgement from the last stage's verdict and what the stages found: rejected
    by a refusal, unless the base builds nothing and neither does the change (could not
    judge: nothing was compared); needs review when a person must look at something;
    else accepted (said so when the base gave nothing to compare with)."""
    outcome, reason, feedback, details = Outcome.ACCEPTED, PASS.reason, "", []
    if not last.ok and j.baseline.broken and broken_base.still_builds_nothing(c.observed.tests):
        outcome, reason = Outcome.COULD_NOT_JUDGE, j.baseline.broken
    elif not last.ok:
        outcome, reason = Outcome.REJECTED, last.reason
        feedback, details = last.feedback, list(last.details)
    elif c.review:
        outcome, reason = Outcome.NEEDS_REVIEW, "needs review: " + "; ".join(c.review[:3])
        feedback, details = reason, list(c.review)
    elif j.baseline.broken:  # said in the verdict: the base gave nothing to compare with
        reason = f"{PASS.reason}; {WHOLE_SUITE_PASSES}"
    return Judgement(
        outcome,
        reason,
        feedback,
        details,
        list(c.review),
        list(c.findings),
        list(checks),
        c.observed.coverage,
    )
