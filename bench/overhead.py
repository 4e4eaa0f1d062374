"""How long an attempt spends outside the model and the test command.

Builds a repository of 300+ Python files, runs N cycles with the scripted model (each
proposal edits a different file and lands), and measures per attempt:

    overhead = attempt wall time - model call latency - check command time

i.e. worktree creation, context, applying edits, syntax check, journal writes, commit,
landing and cleanup. Prints the median and the spread. Aim: median under 0.3 s.

    python bench/overhead.py [--files 300] [--cycles 20]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

from selfforge.journal.store import Journal
from selfforge.judge.outcome import Outcome
from selfforge.repo.git import git
from selfforge.run.session import start_run
from selfforge.ui.reporters import SilentReporter

IDENTITY = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def make_repo(root: Path, n_files: int, cycles: int) -> None:
    for i in range(n_files):
        pkg = root / "src" / f"pkg{i % 12}"
        pkg.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(
            f'def func_{i}_{j}(x: int) -> int:\n    """Helper {j}."""\n    return x + {j}'
            for j in range(8)
        )
        (pkg / f"mod_{i}.py").write_text(f'"""Module {i}."""\n\n{body}\n')
    goals = [f"Make func_{i}_0 in mod_{i}.py return x + 100" for i in range(cycles)]
    (root / "selfforge.toml").write_text(
        "[goals]\nitems = " + json.dumps(goals) + '\n\n[checks]\ntest = "true"\n\n'
        f"[limits]\ncycles = {cycles}\nmax_repairs = 0\n\n"
        '[roles]\nenabled = ["propose", "critique", "review", "reflect"]\n'
    )
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        git(*args, cwd=root, env=IDENTITY)


def script(root: Path, cycles: int) -> Path:
    replies = []
    for i in range(cycles):
        path = f"src/pkg{i % 12}/mod_{i}.py"
        replies.append(
            f"{path}\n<<<<<<< SEARCH\n    return x + 0\n=======\n    return x + 100\n"
            ">>>>>>> REPLACE\n"
        )
    out = root.parent / "script.json"
    out.write_text(json.dumps({"propose": replies}))
    return out


def measure(root: Path) -> list[float]:
    with Journal(root / ".selfforge" / "journal.db") as journal:
        overheads = []
        for attempt in journal.attempts():
            if attempt.ended_at is None:
                continue
            wall = attempt.ended_at - attempt.started_at
            model = sum(c["latency_s"] or 0 for c in journal.calls(attempt.id))
            checks = sum(c["duration_s"] or 0 for c in journal.checks(attempt.id) if c["command"])
            overheads.append(wall - model - checks)
        outcomes = {a.outcome for a in journal.attempts()}
    assert outcomes == {Outcome.ACCEPTED}, f"bench attempts did not all land: {outcomes}"
    return overheads


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--cycles", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        make_repo(root, args.files, args.cycles)
        spec = f"script:{script(root, args.cycles)}"
        started = time.perf_counter()
        start_run(root, model=spec, quiet=True, reporter=SilentReporter())
        total = time.perf_counter() - started
        overheads = measure(root)
    cuts = statistics.quantiles(overheads, n=10)
    print(f"repository: {args.files} files; attempts: {len(overheads)} (all landed)")
    print(
        f"overhead per attempt: median {statistics.median(overheads):.3f} s, "
        f"p10 {cuts[0]:.3f} s, p90 {cuts[-1]:.3f} s, max {max(overheads):.3f} s"
    )
    print(f"whole run incl. baseline: {total:.2f} s")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of the selfforge process: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
