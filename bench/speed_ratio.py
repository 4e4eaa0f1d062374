"""What a judged change costs next to the tests themselves, on a real repository.

Clones REPO, commits a selfforge.toml with its test command, and measures in the same
minutes:

    plain  one run of the test command, as a user would start it (median of --runs)
    first  `selfforge run --task` landing a one-line change with no state at all (a first
           run: .selfforge removed, so no cached baseline, no index, no worktrees):
           Python start-up, baseline, the candidate's checks, landing
    moved  the same after a commit of the user's since the last run (the common cold
           case: the baseline is not cached for the new tree; the state is kept)
    warm   the same for the next one-line change, the baseline cached by the last
    check cold  `selfforge check --patch` of a one-line change on top of a commit of the
           user's that no check measured (the baseline not cached): with two cores the
           base's suite and the candidate's run at once
    check warm  the same for another one-line change on that commit (the baseline cached
           by the cold check)
    check cold, 1 job  check cold with SELFFORGE_JOBS=1: the two suites one after the
           other, as before they ran at once (the yardstick for that)

--samples times each (first, plain, warm, plain, moved, plain, first, ...: each judged
change divided by the plain runs just before and after it), and prints the median ratios
with every sample's, and the median time a judged change adds beyond its test runs (the
ratio moves with the machine's speed; that time much less). Targets: warm <= 1.3x, cold
(first, moved) <= 2.2x; for check on a suite of 2 s or more, on 2 cores, cold <= 1.5x,
warm <= 1.2x. --kinds picks some of them (e.g. --kinds check-cold,check-warm).

    python bench/speed_ratio.py --repo CLONE [--test-cmd "python -m pytest -q"] [--runs 3]
        [--resident] [--own-directives]

--resident runs the judged changes through a resident selfforge (`selfforge resident
start`, in a private folder of the bench's own), so Python's start-up and selfforge's
imports are paid once before, not in each change. --own-directives keeps the
repository's selfforge.toml (selfforge's own: its lint, roles, protected paths and the
smoke run of a candidate selfforge) and sets only the test command, one cycle and no
repairs.

selfforge runs with its bytecode written, as an installed selfforge has it:
PYTHONDONTWRITEBYTECODE, where set, is dropped for its commands (with it, every command
compiled selfforge's ~140 modules anew: the largest part of a sub-second suite's fixed
cost in a profile on this machine). The load average at the end is printed: on a shared
machine it moves every figure.

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
import tomllib
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


KINDS = ("first", "warm", "moved", "check-cold", "check-warm", "check-cold-1")
LABELS = {
    "first": "cold, first",
    "warm": "warm",
    "moved": "cold, moved",
    "check-cold": "check, cold",
    "check-warm": "check, warm",
    "check-cold-1": "check, cold, 1 job",
}
# the test suites' time in a judged change of each: a cold check's two run at once
SUITES = {"first": 2, "warm": 1, "moved": 2, "check-cold": 1, "check-warm": 1, "check-cold-1": 2}


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    ).stdout


def _command(test_cmd: str) -> str:
    words = [sys.executable if w in ("python", "python3") else w for w in shlex.split(test_cmd)]
    return shlex.join(words)


def prepare(source: Path, where: Path, test_cmd: str, own: bool = False) -> tuple[Path, str]:
    clone = where / "repo"
    _git(where, "clone", "-q", "--no-hardlinks", str(source), str(clone))
    # the first code file the tests can reach: not a test, nor in a folder of benches,
    # docs or examples (an edit there measures nothing of the changed code's coverage)
    aside = {
        "bench",
        "benchmark",
        "benchmarks",
        "docs",
        "doc",
        "examples",
        "fuzz",
        "scripts",
        "tests",
    }
    target = next(
        p
        for p in sorted(clone.rglob("*.py"))
        if "test" not in p.name
        and p.name != "setup.py"
        and not aside & set(p.relative_to(clone).parts)
        and p.read_text(errors="replace").strip()  # an edit needs a line
    )
    directives: dict[str, dict[str, object]] = {
        "goals": {"items": ["Keep the code tidy"]},
        "checks": {"test": _command(test_cmd), "timeout_s": 600},
        "limits": {"cycles": 1, "max_repairs": 0},
        "roles": {"enabled": ["propose", "review"]},
        "land": {"mode": "merge"},
    }
    if own:
        directives = tomllib.loads((clone / "selfforge.toml").read_text())
        checks = directives["checks"]
        checks["test"] = _command(test_cmd)
        if "lint" in checks:  # the clone has no virtualenv of its own: the bench's tools
            tools = Path(sys.executable).parent
            words = shlex.split(str(checks["lint"]))
            words[0] = str(tools / Path(words[0]).name)
            checks["lint"] = shlex.join(words)
        directives["limits"].update({"cycles": 1, "max_repairs": 0})
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


def user_commit(clone: Path, n: int) -> None:
    """A commit of the user's between runs (a note file): HEAD's tree is new."""
    (clone / "BENCH_NOTES.md").write_text(f"note {n}\n")
    _git(clone, "add", "BENCH_NOTES.md")
    _git(clone, "commit", "-qm", f"note {n}")


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


def selfforge_env() -> dict[str, str]:
    """The environment of selfforge's commands: bytecode written, as when installed."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def start_resident(scratch: Path) -> dict[str, str]:
    """A resident selfforge in a folder of the bench's own; the environment that uses it."""
    folder = scratch / "resident"
    env = {**selfforge_env(), "SELFFORGE_RESIDENT_DIR": str(folder)}
    start = [sys.executable, "-m", "selfforge", "resident", "start", "--idle", "1h"]
    subprocess.run(start, env=env, check=True, capture_output=True)
    return env


def stop_resident(env: dict[str, str]) -> None:
    stop = [sys.executable, "-m", "selfforge", "resident", "stop"]
    subprocess.run(stop, env=env, capture_output=True)


def judged(
    clone: Path, path: str, n: int, scratch: Path, env: dict[str, str] | None = None
) -> tuple[float, str]:
    """Wall time of `selfforge run --task` landing one added comment line in ``path``."""
    first = (clone / path).read_text().splitlines()[0]
    edit = f"{path}\n<<<<<<< SEARCH\n{first}\n=======\n{first}\n# bench {n}\n>>>>>>> REPLACE\n"
    script = scratch / f"script-{n}.json"
    script.write_text(json.dumps({"propose": [edit]}))
    command = [sys.executable, "-m", "selfforge", "run", "--repo", str(clone), "--json"]
    command += ["--task", f"Add bench comment {n}", "--model", f"script:{script}"]
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, env=env or selfforge_env())
    took = time.monotonic() - started
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    summary = next((e for e in events if e["event"] == "summary"), {})
    baseline = [e["detail"] for e in events if e["event"] == "step" and e["name"] == "baseline"]
    attempts = summary.get("attempts", [])
    outcome = ",".join(str(a.get("outcome")) for a in attempts) or "none"
    where = "landed" if any(a.get("landed") for a in attempts) else "not landed"
    if any(a.get("branch") for a in attempts):
        where = "kept on a branch"  # land mode 'branch': accepted, for a person to merge
    if proc.returncode != 0 or outcome != "accepted":  # a failed run is no sample: say why
        tail = " / ".join(proc.stderr.strip().splitlines()[-3:])
        sys.exit(f"judged change {n} ended with exit {proc.returncode} ({outcome}): {tail}")
    return took, f"{outcome}, {where}; baseline: {' | '.join(baseline)[:90]}"


def checked(
    clone: Path, path: str, n: int, scratch: Path, env: dict[str, str] | None = None
) -> tuple[float, str]:
    """Wall time of `selfforge check --patch` judging one added comment line in ``path``
    on top of HEAD (nothing lands, HEAD stays)."""
    original = (clone / path).read_text()
    (clone / path).write_text(original.replace("\n", f"\n# bench {n}\n", 1))
    patch = scratch / f"change-{n}.patch"
    patch.write_text(_git(clone, "diff"))
    (clone / path).write_text(original)
    command = [sys.executable, "-m", "selfforge", "check", "--repo", str(clone), "--json"]
    started = time.monotonic()
    proc = subprocess.run(
        [*command, "--patch", str(patch)],
        capture_output=True,
        text=True,
        env=env or selfforge_env(),
    )
    took = time.monotonic() - started
    if proc.returncode != 0:  # a rejected change is no sample: say why
        tail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        sys.exit(f"check {n} ended with exit {proc.returncode}: {tail}")
    steps = json.loads(proc.stdout)["steps"]
    return took, "accepted; " + ", ".join(str(s["name"]) for s in steps)


def sample(
    kind: str, clone: Path, path: str, n: int, scratch: Path, env: dict[str, str] | None
) -> tuple[float, str]:
    """One judged change of ``kind``, its state set up first (not timed)."""
    if kind == "first":
        shutil.rmtree(clone / ".selfforge", ignore_errors=True)  # no state
    elif kind in ("moved", "check-cold", "check-cold-1"):
        user_commit(clone, n)
    if kind == "check-cold-1":
        return checked(clone, path, n, scratch, {**(env or selfforge_env()), "SELFFORGE_JOBS": "1"})
    if kind.startswith("check"):
        return checked(clone, path, n, scratch, env)
    return judged(clone, path, n, scratch, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a clone of the repository")
    parser.add_argument("--test-cmd", default="python -m pytest -q")
    parser.add_argument("--runs", type=int, default=3, help="plain runs before and after")
    parser.add_argument("--samples", type=int, default=1, help="cold and warm changes each")
    parser.add_argument("--resident", action="store_true", help="through a resident selfforge")
    parser.add_argument("--own-directives", action="store_true", help="keep selfforge.toml")
    parser.add_argument("--kinds", default=",".join(KINDS), help="which judged changes")
    args = parser.parse_args()
    kinds = [k for k in KINDS if k in args.kinds.split(",")]
    if not kinds:
        sys.exit(f"--kinds: give some of {', '.join(KINDS)}")
    ratios: dict[str, list[float]] = {kind: [] for kind in kinds}
    extra: dict[str, list[float]] = {kind: [] for kind in kinds}
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sf-speed-") as tmp:
        clone, path = prepare(args.repo.resolve(), Path(tmp), args.test_cmd, args.own_directives)
        base = plain(clone, args.test_cmd, args.runs)
        env = start_resident(Path(tmp)) if args.resident else None
        try:
            # Each judged change against the plain runs just before and after it: the
            # machine's speed drifts by more than the overhead being measured.
            before, n = base, 0
            for _ in range(args.samples):
                for kind in kinds:
                    n += 1
                    took, notes[kind] = sample(kind, clone, path, n, Path(tmp), env)
                    after = plain(clone, args.test_cmd, 1)
                    suite = statistics.mean([before, after])
                    ratios[kind].append(took / suite)
                    # The time beyond the test runs: what the ratio is made of, in seconds.
                    extra[kind].append(took - SUITES[kind] * suite)
                    before = after
        finally:
            if env:
                stop_resident(env)
        after = plain(clone, args.test_cmd, args.runs)
    how = "through a resident selfforge" if args.resident else "each command on its own"
    print(f"repository: {args.repo.name}; test command: {args.test_cmd}; edited: {path}; {how}")
    runs = f"median of {args.runs}, before {base:.2f}, after {after:.2f}"
    print(f"plain suite          {statistics.mean([base, after]):6.2f} s  ({runs})")
    for kind in kinds:
        each = ", ".join(f"{r:.2f}" for r in ratios[kind])
        median = statistics.median(ratios[kind])
        print(f"judged, {LABELS[kind]:<18} {median:4.2f}x  (each: {each}; last: {notes[kind]})")
    # The ratio moves with the machine's speed; the time a judged change adds does not.
    suites = {1: "one suite", 2: "two suites"}
    beyond = ", ".join(
        f"{LABELS[k]} +{statistics.median(extra[k]):.2f} s ({suites[SUITES[k]]})" for k in kinds
    )
    print(f"beyond the test runs: {beyond}")
    print(f"load average  {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
