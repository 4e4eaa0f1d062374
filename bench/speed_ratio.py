"""What a judged change costs next to the tests themselves, on a real repository.

Clones REPO, commits a selfforge.toml with its test command, and measures in the same
minutes:

    plain  one run of the test command, as a user would start it (median of --runs)
    cold   `selfforge run --task` landing a one-line change with no state yet (no cached
           baseline): Python start-up, baseline, the candidate's checks, landing
    warm   the same for a second one-line change, the baseline cached by the first

and prints cold/plain and warm/plain. Targets: warm <= 1.3x, cold <= 2.2x.

    python bench/speed_ratio.py --repo CLONE [--test-cmd "python -m pytest -q"] [--runs 3]

The plain run must pass: a command that fails at collection (a src layout whose package
is also installed, without PYTHONPATH=src) would time an error, not the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    ).stdout


def _command(test_cmd: str) -> str:
    words = [sys.executable if w in ("python", "python3") else w for w in shlex.split(test_cmd)]
    return shlex.join(words)


def prepare(source: Path, where: Path, test_cmd: str) -> tuple[Path, str]:
    clone = where / "repo"
    _git(where, "clone", "-q", "--no-hardlinks", str(source), str(clone))
    target = next(p for p in sorted(clone.rglob("*.py")) if "test" not in p.name)
    directives = {
        "goals": {"items": ["Keep the code tidy"]},
        "checks": {"test": _command(test_cmd), "timeout_s": 600},
        "limits": {"cycles": 1, "max_repairs": 0},
        "roles": {"enabled": ["propose", "review"]},
        "land": {"mode": "merge"},
    }
    (clone / "selfforge.toml").write_text(_toml(directives))
    _git(clone, "add", "selfforge.toml")
    _git(clone, "commit", "-qm", "selfforge directives")
    return clone, str(target.relative_to(clone))


def _toml(data: dict[str, dict[str, object]]) -> str:
    lines = []
    for section, values in data.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def plain(clone: Path, test_cmd: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        proc = subprocess.run(_command(test_cmd), shell=True, cwd=clone, capture_output=True)
        times.append(time.monotonic() - started)
        if proc.returncode != 0:  # a suite that fails to start is quick, and no yardstick
            tail = proc.stdout.decode(errors="replace").strip().splitlines()[-3:]
            sys.exit(
                f"the plain run of {test_cmd!r} exits {proc.returncode}: {' / '.join(tail)}\n"
                "fix the command (e.g. PYTHONPATH=src for a src layout) and run again"
            )
        shutil.rmtree(clone / ".pytest_cache", ignore_errors=True)
    return statistics.median(times)


def judged(clone: Path, path: str, n: int, scratch: Path) -> tuple[float, str]:
    """Wall time of `selfforge run --task` landing one added comment line in ``path``."""
    first = (clone / path).read_text().splitlines()[0]
    edit = f"{path}\n<<<<<<< SEARCH\n{first}\n=======\n{first}\n# bench {n}\n>>>>>>> REPLACE\n"
    script = scratch / f"script-{n}.json"
    script.write_text(json.dumps({"propose": [edit]}))
    command = [sys.executable, "-m", "selfforge", "run", "--repo", str(clone), "--json"]
    command += ["--task", f"Add bench comment {n}", "--model", f"script:{script}"]
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True)
    took = time.monotonic() - started
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    summary = next((e for e in events if e["event"] == "summary"), {})
    baseline = [e["detail"] for e in events if e["event"] == "step" and e["name"] == "baseline"]
    landed = any(a.get("landed") for a in summary.get("attempts", []))
    return took, f"landed={landed}; baseline: {' | '.join(baseline)[:90]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a clone of the repository")
    parser.add_argument("--test-cmd", default="python -m pytest -q")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="selfforge-speed-") as tmp:
        clone, path = prepare(args.repo.resolve(), Path(tmp), args.test_cmd)
        base = plain(clone, args.test_cmd, args.runs)
        cold, cold_note = judged(clone, path, 1, Path(tmp))
        warm, warm_note = judged(clone, path, 2, Path(tmp))
        after = plain(clone, args.test_cmd, args.runs)
    suite = statistics.mean([base, after])
    print(f"repository: {args.repo.name}; test command: {args.test_cmd}; edited: {path}")
    runs = f"median of {args.runs}, before {base:.2f}, after {after:.2f}"
    print(f"plain suite   {suite:6.2f} s  ({runs})")
    print(f"judged, cold  {cold:6.2f} s  = {cold / suite:4.2f}x  ({cold_note})")
    print(f"judged, warm  {warm:6.2f} s  = {warm / suite:4.2f}x  ({warm_note})")
    print(f"load average  {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
