"""The comparison of one measure between a base and a candidate: the relative change,
its confidence interval and the verdict word (improved, unchanged, worse, inconclusive).

The runs come in interleaved pairs (base, candidate, base, candidate …), so a machine
that slows down or speeds up during the comparison moves both sides of a pair alike.
The interval is Student's t interval (its quantile from scipy.special) of the mean of
the pairs' log ratios (candidate / base), turned back into a relative change: exact for
normal noise, robust to slow drift. It is looked at after every pair from the fifth on,
and every look is a chance to be fooled by noise, so the 1 % of error is shared among
the looks the budget allows (Bonferroni: with max_runs = 30, each interval is a 99.96 %
one). Simulated, a no-op change on a measure with ±30 % uniform noise came out
improved 43 times in 5000 comparisons with a plain 99 % interval at every look; with the
shared one, 1 in 3000 (max_runs 30), 0 in 3000 (max_runs 12), 0 in 2000
(bench/measure_noise.py). A measure whose runs do not vary on either side (a size, a count,
instructions) is settled by one pair.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

IMPROVED, UNCHANGED, WORSE, INCONCLUSIVE = "improved", "unchanged", "worse", "inconclusive"
VERDICTS = (IMPROVED, UNCHANGED, WORSE, INCONCLUSIVE)
ALPHA = 0.01  # the chance of a wrong verdict, shared among the looks
MIN_PAIRS = 5  # the first look at a measure that varies
STEADY_PAIRS = 3  # pairs of equal values that show a command's number does not vary


@dataclass(frozen=True)
class Estimate:
    """Where the pairs so far put the relative change (candidate / base − 1)."""

    change: float | None  # None: the base is 0 and the candidate is not
    low: float | None
    high: float | None
    verdict: str  # one of VERDICTS; inconclusive while sampling may still settle it
    settled: bool  # no more runs needed
    runs_needed: int | None = None  # pairs that would likely settle an inconclusive one


def typical(values: list[float]) -> float:
    """The value shown for a side: the median of its runs."""
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def estimate(
    base: list[float],
    candidate: list[float],
    better: str,
    min_change: float,
    steady: bool = False,
    max_pairs: int = MIN_PAIRS,
) -> Estimate:
    """The change so far and whether it is settled: its interval entirely beyond
    ``min_change`` (improved or worse), entirely within it (unchanged). ``steady``: a
    kind whose runs do not vary (one pair settles it); any other measure is taken as
    steady once STEADY_PAIRS pairs show no variance on either side. ``max_pairs``: the
    budget's pairs, which set how many looks share the error."""
    pairs = list(zip(base, candidate, strict=False))
    if not pairs:
        return Estimate(None, None, None, INCONCLUSIVE, False)
    no_variance = len(set(base)) == 1 and len(set(candidate)) == 1
    if no_variance and (steady or len(pairs) >= STEADY_PAIRS):
        change = _relative(base[0], candidate[0])
        return Estimate(change, change, change, _word(change, change, better, min_change), True)
    if any(a <= 0 or b <= 0 for a, b in pairs):  # a log ratio needs positive values
        return _by_medians(base, candidate, better, min_change, len(pairs))
    if len(pairs) < MIN_PAIRS:
        change = _relative(typical(base), typical(candidate))
        return Estimate(change, None, None, INCONCLUSIVE, False)
    logs = [math.log(b / a) for a, b in pairs]
    mean = statistics.fmean(logs)
    half = t_quantile(len(logs) - 1, confidence(max_pairs)) * statistics.stdev(logs)
    low_log, high_log = mean - half / math.sqrt(len(logs)), mean + half / math.sqrt(len(logs))
    change, low, high = math.expm1(mean), math.expm1(low_log), math.expm1(high_log)
    word = _word(low, high, better, min_change)
    needed = (
        None if word != INCONCLUSIVE else _pairs_needed(change, low, high, min_change, len(logs))
    )
    return Estimate(change, low, high, word, word != INCONCLUSIVE, needed)


def t_quantile(df: int, level: float) -> float:
    """The two-sided Student's t quantile for ``level`` (scipy.special's: the light part
    of scipy, a fifth of scipy.stats' import time)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 1 - (1 - level) / 2))


def confidence(max_pairs: int) -> float:
    """The level of each look's interval: 1 − ALPHA shared among the looks."""
    return 1 - ALPHA / max(1, max_pairs - MIN_PAIRS + 1)


def _relative(base: float, candidate: float) -> float | None:
    if base == 0:
        return 0.0 if candidate == 0 else None
    return candidate / base - 1


def _word(low: float | None, high: float | None, better: str, min_change: float) -> str:
    if low is None or high is None:
        return INCONCLUSIVE
    if high < -min_change or low > min_change:
        went_down = high < -min_change
        return IMPROVED if went_down == (better == "lower") else WORSE
    if -min_change <= low and high <= min_change:
        return UNCHANGED
    return INCONCLUSIVE


def _by_medians(
    base: list[float], candidate: list[float], better: str, min_change: float, n: int
) -> Estimate:
    """Values at or below zero (a count that reached 0): the medians' change, decided
    only once the budget's pairs are in (no interval is drawn)."""
    a, b = typical(base), typical(candidate)
    change = _relative(a, b)
    if change is None:
        word = WORSE if better == "lower" else IMPROVED
        return Estimate(None, None, None, word, n >= MIN_PAIRS)
    return Estimate(
        change, change, change, _word(change, change, better, min_change), n >= MIN_PAIRS
    )


def _pairs_needed(change: float, low: float, high: float, min_change: float, n: int) -> int | None:
    """How many pairs would likely settle it: the interval narrows as 1/√n, and must
    shrink to the distance between the change and the nearest edge of ±min_change."""
    half = (high - low) / 2
    room = abs(abs(change) - min_change)
    if room <= 0 or half <= 0:
        return None
    return max(n + 1, math.ceil(n * (half / room) ** 2))
