"""selfforge's own measure (``launch-import`` in selfforge.toml's ``[[measures]]``): the
time to import ``selfforge.cli.launch``, the entry point every ``selfforge`` command
imports before it is handed to a resident selfforge or run here.

Each of RUNS fresh interpreters times the import itself (its own start-up left out); the
best is printed, in milliseconds: the figure the judge compares between a base and a
candidate (``selfforge measure A..B``). It imports the selfforge that ``PYTHONPATH`` finds
first: the judge sets it to the measured worktree's ``src``.

    python bench/launch_import.py
"""

from __future__ import annotations

import subprocess
import sys

RUNS = 3
TIMED = (
    "import time\n"
    "start = time.perf_counter()\n"
    "import selfforge.cli.launch\n"
    "print(time.perf_counter() - start)\n"
)


def once() -> float:
    """One fresh interpreter's import time, in seconds."""
    done = subprocess.run([sys.executable, "-c", TIMED], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    best = min(once() for _ in range(RUNS))
    print(f"selfforge.cli.launch import: {best * 1000:.3f} ms")


if __name__ == "__main__":
    main()
