"""The comparison of one measure between a base and a candidate: the relative change,
its confidence interval and the verdict word (improved, unchanged, worse, inconclusive).

The runs come in interleaved pairs (base, candidate, base, candidate …), so a machine
that slows down or speeds up during the comparison moves both sides of a pair alike.
The interval is Student's t interval (its quantile computed here) of the mean of
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

import functools
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


@functools.lru_cache(maxsize=256)
def t_quantile(df: int, level: float) -> float:
    """The two-sided Student's t quantile for ``level``: the t whose two tails together
    hold 1 − level. Both tails beyond t hold I_x(df/2, 1/2) with x = df / (df + t²)
    (the regularized incomplete beta function), so t is found by Newton's method on the
    log of that tail, kept inside a bracket that bisection narrows when a step would
    leave it. Pure Python, under a millisecond: scipy's import (0.3–2 s) cost more than
    the runs of a small measure; tests/test_measure_overhead.py checks it against
    scipy.special.stdtrit."""
    tail = 1 - level
    if not 0 < tail < 1:
        raise ValueError(f"a confidence level between 0 and 1, not {level}")
    low, high = 0.0, 1.0
    while _tails(df, high) > tail:
        low, high = high, high * 2
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    t = (low + high) / 2
    for _ in range(100):
        beyond = _tails(df, t)
        if beyond > tail:
            low = t
        else:
            high = t
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = (math.log(beyond) - math.log(tail)) * beyond / (2 * density)
        nxt = t + step  # the tails fall by twice the density as t grows
        if not low < nxt < high:
            nxt = (low + high) / 2
        if abs(nxt - t) <= 1e-14 * t:
            return nxt
        t = nxt
    return t


def _tails(df: int, t: float) -> float:
    """P(|T| > t) for Student's t with ``df`` degrees of freedom."""
    return _beta_inc(df / 2, 0.5, df / (df + t * t))


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (Numerical Recipes' betai: the fraction converges fast below (a + 1) / (a + b + 2),
    and I_x(a, b) = 1 − I_{1−x}(b, a) above)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The incomplete beta function's continued fraction (modified Lentz)."""
    tiny = 1e-300

    def kept(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1 / kept(1 - (a + b) * x / (a + 1))
    h = d
    for m in range(1, 500):
        even = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m))
        d = 1 / kept(1 + even * d)
        c = kept(1 + even / c)
        h *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))
        d = 1 / kept(1 + odd * d)
        c = kept(1 + odd / c)
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return h


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
