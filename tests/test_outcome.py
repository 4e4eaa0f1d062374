"""The one vocabulary of outcomes (judge/outcome.py): check's exit codes, the bench's
reading of them, the one ranking, and what the journal holds."""

from __future__ import annotations

from selfforge.judge.outcome import JOURNALED, Outcome


def test_check_exit_codes_and_the_bench_reading_them_back() -> None:
    codes = {o: o.exit_code for o in Outcome}
    assert codes[Outcome.ACCEPTED] == 0 and codes[Outcome.REJECTED] == 1
    assert codes[Outcome.COULD_NOT_JUDGE] == 2 and codes[Outcome.NEEDS_REVIEW] == 3
    for verdict in (Outcome.ACCEPTED, Outcome.REJECTED, Outcome.NEEDS_REVIEW):
        assert Outcome.of_exit_code(verdict.exit_code) is verdict
    assert Outcome.of_exit_code(2) is Outcome.COULD_NOT_JUDGE
    assert Outcome.of_exit_code(-9) is Outcome.COULD_NOT_JUDGE  # killed: no verdict


def test_one_ranking_best_first() -> None:
    ranked = sorted(Outcome, key=lambda o: o.rank)
    assert ranked[0] is Outcome.ACCEPTED
    # best of N keeps the best candidate's; the bench report lists needs review first
    assert Outcome.REJECTED.rank < Outcome.NO_EDITS.rank < Outcome.ERROR.rank
    assert Outcome.NEEDS_REVIEW.rank < Outcome.REJECTED.rank < Outcome.COULD_NOT_JUDGE.rank


def test_the_journal_holds_every_outcome_but_could_not_judge() -> None:
    assert Outcome.COULD_NOT_JUDGE.journaled is Outcome.ERROR
    assert set(JOURNALED) == {o.journaled for o in Outcome}
    assert ", ".join(JOURNALED) == "accepted, rejected, no_edits, error, needs_review"


def test_words_a_person_reads() -> None:
    assert Outcome.NEEDS_REVIEW.shown == "needs review"
    assert f"{Outcome.NO_EDITS}" == "no_edits" and Outcome.ACCEPTED == "accepted"
    assert {o.tone for o in Outcome} == {"good", "bad", "unsure"}
