"""How often `measure A..B`'s statistics are fooled by noise, and how many pairs a real
change needs: measure/stats.estimate driven exactly as a comparison drives it (a look
after each pair from the fifth, up to max_runs), on simulated runs.

    no-op     both sides the same, each run ×U(1 - jitter, 1 + jitter): how many
              comparisons end improved (or worse) — the false verdicts
    ratio R   the candidate R × the base, the same noise: how many settle, in how many
              pairs

    python bench/measure_noise.py [--trials 3000] [--jitter 0.3] [--max-runs 30]
"""

from __future__ import annotations

import argparse
import random
import statistics

from selfforge.measure import stats


def compare(ratio: float, jitter: float, max_runs: int, rng: random.Random) -> tuple[str, int]:
    a: list[float] = []
    b: list[float] = []
    est = None
    while len(a) < max_runs:
        a.append(100 * rng.uniform(1 - jitter, 1 + jitter))
        b.append(100 * ratio * rng.uniform(1 - jitter, 1 + jitter))
        est = stats.estimate(a, b, "lower", 0.05, False, max_runs)
        if est.settled:
            break
    assert est is not None
    return est.verdict, len(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--jitter", type=float, default=0.3)
    parser.add_argument("--max-runs", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(42)
    print(
        f"jitter ±{args.jitter:.0%}, min_change 5%, max_runs {args.max_runs}, "
        f"each look's interval {stats.confidence(args.max_runs):.4%}"
    )
    verdicts = [compare(1.0, args.jitter, args.max_runs, rng)[0] for _ in range(args.trials)]
    counts = {v: verdicts.count(v) for v in stats.VERDICTS}
    print(f"no-op: {counts} of {args.trials}")
    for ratio in (1 / 3, 1.5, 1.1):
        runs = [compare(ratio, args.jitter, args.max_runs, rng) for _ in range(300)]
        settled = [n for v, n in runs if v != stats.INCONCLUSIVE]
        print(
            f"ratio {ratio:.2f}: settled {len(settled)}/300, pairs median "
            f"{statistics.median(n for _, n in runs):.0f}, max {max(n for _, n in runs)}"
        )


if __name__ == "__main__":
    main()
