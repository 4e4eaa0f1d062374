"""What the sandbox costs per check run: `true` and a one-test pytest run, with and without
bubblewrap (and the per-check cgroup, results channel and throwaway git dir).

    python bench/sandbox.py [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selfforge.judge.sandbox.command import CheckSpace, run_command, run_tests
from selfforge.judge.sandbox.limits import enforcement
from selfforge.repo import git


def _repo(root: Path) -> tuple[Path, str]:
    repo = root / "repo"
    repo.mkdir()
    (repo / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    env = {
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        git.git(*args, cwd=repo, env=env)
    tree = repo / ".selfforge" / "wt"
    git.git("worktree", "add", "-q", "--detach", str(tree), "HEAD", cwd=repo)
    return tree, git.git("rev-parse", "HEAD", cwd=repo).strip()


def _median_ms(fn, runs: int) -> float:
    fn()  # warm caches
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        tree, head = _repo(Path(tmp))
        repo = tree.parents[1]
        on = CheckSpace(repo=repo, git_common_dir=repo / ".git")
        off = CheckSpace(repo=repo, git_common_dir=repo / ".git", mode="off")
        pytest = f"{sys.executable} -m pytest -q"
        rows = []
        for label, command, runner in (
            ("true", "true", run_command),
            ("pytest, 1 test", pytest, run_tests),
        ):
            n = runs if command == "true" else max(5, runs // 3)
            plain = _median_ms(lambda c=command, r=runner: r(c, tree, 60, off, head=head), n)
            boxed = _median_ms(lambda c=command, r=runner: r(c, tree, 60, on, head=head), n)
            rows.append((label, plain, boxed))
        bare = _median_ms(lambda: subprocess.run(["true"]), runs)
    print(f"limits enforced by: {enforcement()}; {runs} runs, medians")
    print(f"{'check':<16}{'no sandbox':>12}{'sandbox':>12}{'cost':>10}")
    for label, plain, boxed in rows:
        print(f"{label:<16}{plain:>10.1f}ms{boxed:>10.1f}ms{boxed - plain:>8.1f}ms")
    print(f"(a bare subprocess `true`: {bare:.1f} ms)")


if __name__ == "__main__":
    main()
