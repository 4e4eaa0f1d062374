"""The judge on a real project's history: gold landed, negatives rejected, and
selfforge's own time per instance beyond its test runs.

    git clone https://github.com/more-itertools/more-itertools /tmp/more-itertools
    python bench/judge_history.py --repo /tmp/more-itertools [--workers 2]

The instances (bench/more_itertools.jsonl.gz) were mined from that history with:

    selfforge bench mine --repo /tmp/more-itertools --limit 30 --scope class \\
        --out bench/more_itertools.jsonl.gz

Each replay runs in a fresh clone (tests first, then selfforge's loop with the gold or the
mutated change through the scripted model, then the tests again); see README "Bench".
Prints the figures the README's performance table quotes, and where the report is.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from selfforge.bench.records import read_instances, read_results

HERE = Path(__file__).resolve().parent
INSTANCES = HERE / "more_itertools.jsonl.gz"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="a clone of more-itertools")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--results", type=Path, default=None, help="reuse to resume")
    parser.add_argument("--instances", type=Path, default=INSTANCES)
    args = parser.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="judge-history-")) / "results.jsonl"
    command = [
        sys.executable, "-m", "selfforge", "bench", "run", "--instances", str(args.instances),
        "--repo", args.repo, "--gold", "--negatives", "--workers", str(args.workers),
        "--results", str(results),
    ]  # fmt: skip
    load = os.getloadavg()[0]
    proc = subprocess.run(command)
    if proc.returncode != 0:
        return proc.returncode
    figures(read_results(results), len(read_instances(args.instances)), load)
    return 0


def figures(results: list, instances: int, load: float) -> None:
    gold = [r for r in results if r.mode == "gold" and r.error is None]
    negative = [
        r for r in results if r.mode == "negative" and r.error is None and r.skipped is None
    ]
    errors = [r for r in results if r.error is not None]
    landed = sum(r.landed for r in gold)
    solved = sum(r.solved for r in gold)
    rejected = sum(not r.landed for r in negative)
    overhead = [r.overhead_s for r in gold if r.overhead_s is not None]
    runs = [r.selfforge_test_runs for r in gold]
    print(f"\ninstances: {instances}; load average at start {load:.1f} (2 cores)")
    print(f"gold landed:        {landed}/{len(gold)} ({_pct(landed, len(gold))}); solved {solved}")
    print(f"negatives rejected: {rejected}/{len(negative)} ({_pct(rejected, len(negative))})")
    for kind in dict.fromkeys(r.kind for r in results if r.mode == "negative"):
        rows = [r for r in negative if r.kind == kind]
        undrawn = sum(r.kind == kind and r.skipped is not None for r in results)
        print(
            f"  {kind}: rejected {sum(not r.landed for r in rows)}/{len(rows)}, not drawn {undrawn}"
        )
    for r in negative:
        if r.landed:
            print(f"  false acceptance ({r.kind}): {r.instance_id}: {'; '.join(r.reasons)[:160]}")
    for r in gold:
        if not r.landed:
            print(f"  false rejection: {r.instance_id}: {'; '.join(r.reasons)[:160]}")
    if overhead:
        q = statistics.quantiles(overhead, n=10) if len(overhead) > 1 else overhead * 9
        cpu = [r.overhead_cpu_s for r in gold if r.overhead_cpu_s is not None]
        print(
            f"selfforge overhead per gold instance beyond its test runs (their processes' "
            f"lifetimes): median {statistics.median(overhead):.2f} s wall (p10 {q[0]:.2f}, "
            f"p90 {q[-1]:.2f}); CPU of selfforge's own process: median "
            f"{statistics.median(cpu or [0]):.2f} s; test runs per instance: median "
            f"{statistics.median(runs):g}; load average at the end {os.getloadavg()[0]:.1f}"
        )
        index = [r.index_s for r in gold]
        print(
            f"codebase index built once per fresh clone (before the run, not counted): "
            f"median {statistics.median(index):.2f} s"
        )
    print(f"harness errors: {len(errors)}")
    for r in errors:
        print(f"  {r.instance_id} {r.mode}: {r.error}")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


if __name__ == "__main__":
    raise SystemExit(main())
