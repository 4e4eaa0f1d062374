"""What a bench replay's clone costs: the history up to the base alone (fetched by sha,
``replay.clone_at``) against a shared clone of everything (the bench before #22.7).

    python bench/clone_cost.py --repo PATH [--back N] [--runs 5]

The base is ``N`` commits before HEAD (default: the middle of the history). Prints the
median wall time of each (the clone, and a checkout of the base), and the objects each
clone can read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from selfforge.bench.replay import clone_at
from selfforge.repo.git import git


def shared(repo: str, base: str, clone: Path) -> None:
    git("clone", "-q", "--shared", "--no-checkout", repo, str(clone), cwd=clone.parent)
    git("checkout", "-q", "-B", "bench", base, cwd=clone)


def past_only(repo: str, base: str, clone: Path) -> None:
    clone_at(repo, base, clone)


def timed(make, repo: str, base: str, runs: int) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(runs):
        place = Path(tempfile.mkdtemp(prefix="clone-cost-"))
        try:
            started = time.monotonic()
            make(repo, base, place / "repo")
            times.append(time.monotonic() - started)
            out = git("cat-file", "--batch-all-objects", "--batch-check", cwd=place / "repo")
            count = len(out.splitlines())
        finally:
            shutil.rmtree(place, ignore_errors=True)
    return statistics.median(times), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--back", type=int, default=None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    repo = str(Path(args.repo).absolute())
    total = int(git("rev-list", "--count", "HEAD", cwd=Path(repo)))
    back = total // 2 if args.back is None else args.back
    base = git("rev-parse", f"HEAD~{back}", cwd=Path(repo)).strip()
    print(f"{repo}: {total} commits, base HEAD~{back}; load average {os.getloadavg()[0]:.1f}")
    for name, make in (("shared clone of everything", shared), ("history up to base", past_only)):
        seconds, objects = timed(make, repo, base, args.runs)
        print(f"  {name:28} median {seconds:.3f} s, {objects} objects readable")


if __name__ == "__main__":
    main()
