"""What best of N costs: `run --parallel 3` (three scripted candidates checked at once)
against a run with one candidate, on a small repository with two failing tests.

    python bench/parallel.py [--runs 3]

Prints the median wall time of each run, selfforge's own CPU time (children's rusage:
the sandboxed checks' processes are reaped inside their pid namespace and do not show
in it), and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"  # noqa: E501
TESTS = (
    "from calc import add, mul, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert sub(5, 3) == 2\n\n\ndef test_mul():\n    assert mul(4, 3) == 12\n"
)
TOML = f"""[goals]
items = ["Fix the failing tests"]
[checks]
test = "{sys.executable} -m pytest -q"
[limits]
cycles = 1
max_repairs = 0
"""


def _edit(old: str, new: str) -> str:
    return f"calc.py\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n"


ADD = _edit("def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
BOTH = ADD + _edit("def mul(a, b):\n    return a + b\n", "def mul(a, b):\n    return a * b\n")
BREAK = BOTH + _edit("def sub(a, b):\n    return a - b\n", "def sub(a, b):\n    return a + b\n")


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    for name, text in {"calc.py": CALC, "test_calc.py": TESTS, "selfforge.toml": TOML}.items():
        (repo / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return repo


def _one(replies: list[str], parallel: int) -> tuple[float, float]:
    """Wall and CPU seconds of one run in a fresh repository."""
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        repo = _repo(Path(tmp))
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"propose": replies}))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        command = [sys.executable, "-m", "selfforge", "run", "--repo", str(repo), "--json"]
        command += ["--model", f"script:{script}", "--parallel", str(parallel)]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary = json.loads(out.splitlines()[-1])
        landed = [a["candidate"] for a in summary["attempts"] if a["landed"]]
        assert landed == ([2] if parallel > 1 else [None]), summary
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    for label, replies, n in (("one candidate", [BOTH], 1), ("best of 3", [ADD, BOTH, BREAK], 3)):
        figures = [_one(replies, n) for _ in range(runs)]
        wall = statistics.median(w for w, _ in figures)
        cpu = statistics.median(c for _, c in figures)
        print(f"{label:>14}: wall {wall:5.1f} s, selfforge CPU {cpu:4.1f} s (median of {runs})")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
