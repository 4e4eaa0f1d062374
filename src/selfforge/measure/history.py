"""Every measurement kept (issue 42, point 8): what ``run``, ``check`` and ``measure``
measured, written to the journal's ``measurements`` table in one place, so that ``show``,
the run's report and the dashboard's plot of each measure over the landed commits read
the same rows."""

from __future__ import annotations

from collections.abc import Sequence

from selfforge.journal.store import Journal
from selfforge.measure.sample import Comparison, Value


def keep(
    journal: Journal,
    source: str,
    base: str | None,
    candidate: str | None,
    comparisons: Sequence[Comparison] = (),
    values: Sequence[Value] = (),
    run_id: int | None = None,
    attempt_id: int | None = None,
) -> None:
    """Journal each comparison of ``base`` and ``candidate`` (and each value at the one
    revision ``candidate``); ``source``: run, check or measure."""
    for c in comparisons:
        journal.record_measurement(
            source=source,
            figures=c.to_json(),
            base_commit=base,
            candidate_commit=candidate,
            run_id=run_id,
            attempt_id=attempt_id,
        )
    for v in values:
        journal.record_measurement(
            source=source,
            figures={**v.to_json(), "seconds": round(v.seconds, 3)},
            base_commit=None,
            candidate_commit=candidate,
            run_id=run_id,
            attempt_id=attempt_id,
        )
