"""What `selfforge measure A..B` costs beyond the runs its statistics need.

Makes a small repository with two commits and two measures: `steady` (a size: one run
per side) and `noisy` (a command printing a number with ±30 % jitter: runs until its
budget, `max_runs`), then runs `selfforge measure A..B --json` --repeat times (each in a
process of its own, SELFFORGE_RESIDENT=0) and prints per call:

    wall      the whole command, process start to exit
    runs      the runs' own wall time (each: its sandbox made, the command, its number
              read), summed: "seconds" of each measure in the JSON
    overhead  wall - runs: Python's start-up, selfforge's imports, the directives, the
              worktrees (made once, then reset), scipy's statistics, the JSON

Target (issue 42): overhead <= 0.3 s. Also a `--no-sandbox` row, to tell the sandbox's
own cost (inside `runs`) from selfforge's, and a `resident` row: the command handed to a
resident selfforge (its modules and scipy's t quantile preloaded: no Python start-up;
`selfforge resident start` first, stopped at the end). The load average before and after
is printed: on a shared machine it moves every figure.

    python bench/measure_overhead.py [--repeat 3] [--max-runs 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


def make_repo(root: Path, max_runs: int) -> tuple[Path, str, str]:
    repo = root / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    jitter = f"{sys.executable} -c 'import random; print(100 * random.uniform(0.7, 1.3))'"
    (repo / "selfforge.toml").write_text(
        f'[checks]\ntest = "{sys.executable} -m pytest -q"\n\n'
        '[[measures]]\nname = "steady"\nkind = "size"\nfile = "a.py"\n\n'
        f'[[measures]]\nname = "noisy"\ncommand = "{jitter}"\nmax_runs = {max_runs}\n'
    )
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "a.py").write_text("x = 1  # a comment\n")
    git(repo, "commit", "-q", "-am", "tip")
    return repo, base, git(repo, "rev-parse", "HEAD")


def one(repo: Path, rng: str, *flags: str, resident: bool = False) -> tuple[float, float]:
    env = {**os.environ, "SELFFORGE_RESIDENT": "1" if resident else "0"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "selfforge", "measure", rng, "--repo", str(repo), "--json", *flags],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"selfforge measure failed: {done.stderr.strip()}")
    runs = sum(m["seconds"] for m in json.loads(done.stdout)["measures"])
    return wall, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-runs", type=int, default=8)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        repo, base, tip = make_repo(Path(tmp), args.max_runs)
        one(repo, f"{base}..{tip}")  # warm: the worktrees made, bytecode written
        start = [sys.executable, "-m", "selfforge", "resident", "start"]
        subprocess.run(start, capture_output=True, check=False)
        time.sleep(5)  # its preloading done
        rows_by = {
            "sandbox": lambda: one(repo, f"{base}..{tip}"),
            "no sandbox": lambda: one(repo, f"{base}..{tip}", "--no-sandbox"),
            "resident": lambda: one(repo, f"{base}..{tip}", resident=True),
        }
        for label, call in rows_by.items():
            rows = [call() for _ in range(args.repeat)]
            for wall, runs in rows:
                print(
                    f"{label:>10}: wall {wall:6.2f} s  runs {runs:6.2f} s  "
                    f"overhead {wall - runs:5.2f} s"
                )
            median = statistics.median(w - r for w, r in rows)
            print(f"{label:>10}: median overhead {median:.2f} s (target <= 0.30 s)")
    stop = [sys.executable, "-m", "selfforge", "resident", "stop"]
    subprocess.run(stop, capture_output=True, check=False)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
