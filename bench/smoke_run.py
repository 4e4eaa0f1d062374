"""What the smoke run of a self-change costs, scenario by scenario.

A change to selfforge itself lands only after the candidate's selfforge completes the demo
and refuses each known-bad change (``judge/selfcheck.py``). This bench runs the same
commands, with this checkout as the candidate, outside a sandbox of its own (each command's
checks are sandboxed as usual), and prints each one's wall time and the total, with the
load average at the end: on a shared machine the load moves every figure.

    python bench/smoke_run.py [--plugins] [--code CHECKOUT]

``--plugins`` lets the sample projects' pytest load every plugin this Python has installed
(the smoke run turns that off: none of them uses one). ``--code`` times another checkout's
selfforge (an older commit's worktree) in the same minutes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from selfforge.judge.scenarios import KNOWN_BAD, write_scenario
from selfforge.judge.selfcheck import smoke_env

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugins", action="store_true", help="load installed pytest plugins")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to time")
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    if not args.plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with tempfile.TemporaryDirectory(prefix="selfforge-smoke-bench-") as tmp:
        out = Path(tmp)
        python = smoke_env(out / "state", args.code.resolve())
        (out / "demo").mkdir()
        commands = [
            (
                "demo",
                [str(python), "-m", "selfforge", "demo", "--replay", "--dir", str(out / "demo")],
            )
        ]
        for scenario in KNOWN_BAD:
            repo, script = write_scenario(scenario, out, python)
            commands.append(
                (
                    scenario.name,
                    [str(python), "-m", "selfforge", "run", "--repo", str(repo), "--model",
                     f"script:{script}", "--cycles", "1", "--parallel", str(scenario.parallel),
                     "--json"],
                )
            )  # fmt: skip
        total = 0.0
        for name, argv in commands:
            started = time.perf_counter()
            subprocess.run(argv, env=env, capture_output=True, check=False)
            took = time.perf_counter() - started
            total += took
            print(f"{name:22s} {took:6.1f} s")
        print(f"{'in all':22s} {total:6.1f} s   (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
