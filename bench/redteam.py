"""selfforge's own red team: every attack class it was broken by, each with a control.

Each class is a module of attacks written as candidate code a model could propose (or as
a check it could run), run for real — bubblewrap, git, pytest, the CLI — and a control
that shows the same attack works without the defence. This script runs them and prints
one row per class: how many attacks the defence refused, and how many controls showed
the attack working without it. Exit 1 if any attack got through or any control failed
(a control that fails means the attack proves nothing). Some modules run the control
inside the attack's own test (the same write under a roomier limit, the same channel
with the secret presented): their controls column is 0/0.

    python bench/redteam.py [--junit DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).parents[1]
CLASSES = [
    ("root keeps its capabilities in the sandbox", "tests/test_sandbox_root.py"),
    ("selfforge reads through symlinks tests leave", "tests/test_symlinks.py"),
    ("directives written by the candidate", "tests/test_directives_trust.py"),
    ("a process started outside the sandbox (bench grading)", "tests/test_one_spawner.py"),
    ("credentials in toolchain folders", "tests/test_sandbox_home.py"),
    ("the results channel crashed, flooded, forged", "tests/test_results_channel.py"),
    ("diffs blinded by .gitattributes, git settings in the tree", "tests/test_diff_attributes.py"),
    ("test infrastructure from the candidate", "tests/test_collection_infra.py"),
    ("filling the disk", "tests/test_sandbox_quota.py"),
    ("a weakened judge landing itself", "tests/test_selfjudge_protection.py"),
    ("keys, git hooks, network, daemons (first round)", "tests/test_sandbox_attacks.py"),
]


def run_class(module: str, junit: Path) -> tuple[int, int, int, int, list[str]]:
    """(attacks refused, attacks, controls that worked, controls, failures)."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist"]
    command += ["-n", "0", f"--junit-xml={junit}", module]
    subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    counts = [0, 0, 0, 0]
    failures = []
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("name", "")
        control = "control" in name
        failed = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        if skipped:
            continue
        counts[2 if control else 0] += not failed
        counts[3 if control else 1] += 1
        if failed:
            failures.append(f"{module}::{name}")
    return counts[0], counts[1], counts[2], counts[3], failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--junit", type=Path, help="keep each class's junit XML here")
    args = parser.parse_args()
    folder = args.junit or Path(tempfile.mkdtemp(prefix="selfforge-redteam-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{'attack class':58} {'refused':>9} {'controls':>9}")
    failures: list[str] = []
    for n, (label, module) in enumerate(CLASSES):
        refused, attacks, worked, controls, failed = run_class(module, folder / f"{n}.xml")
        failures += failed
        print(f"{label:58} {refused:>4}/{attacks:<4} {worked:>4}/{controls:<4}")
    for failure in failures:
        print(f"FAILED {failure}")
    print("every attack refused, every control showed its attack" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
