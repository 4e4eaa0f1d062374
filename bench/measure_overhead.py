"""What `selfforge measure A..B` costs beyond the runs its statistics need.

Makes a small repository with two commits and two measures: `steady` (a size: one run
per side) and `noisy` (a command printing a number with ±30 % jitter: runs until its
budget, `max_runs`), then runs `selfforge measure A..B --json` --repeat times (each in a
process of its own) and prints per call:

    wall      the whole command, process start to exit
    runs      the runs' own wall time (each: its sandbox made, the command, its number
              read), summed: "seconds" of each measure in the JSON
    overhead  wall - runs: Python's start-up, selfforge's imports, the directives, the
              worktrees (made once, then reset), the statistics, the JSON

Target (issue 42): overhead <= 0.3 s. Rows: `default` (the command as a user runs it:
the first call starts a resident selfforge on its way out, each later one is handed to
it), `resident` (the same, the resident started by `selfforge resident start`: no
Python start-up, selfforge's modules preloaded), `own process` (SELFFORGE_RESIDENT=0, as
on CI: Python's start-up and every import paid per call) and `no sandbox` (own process,
`--no-sandbox`: the sandbox's own cost, inside `runs`, told apart); then `worker CPU`:
the CPU time a resident's worker spends outside the runs, its own and its git
processes' (a load that makes every wall time wait for a core does not move it).
Bytecode is written as an installed selfforge has it (PYTHONDONTWRITEBYTECODE, where
set, is dropped: with it every call compiles selfforge anew). The load average before
and after is printed: on a shared machine it moves every figure. `--code DIR` measures
the selfforge source tree DIR (its `src`) instead of the installed one, to compare two
versions in the same minutes.

    python bench/measure_overhead.py [--repeat 5] [--max-runs 8] [--code DIR]
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


def environment(code: str | None, resident: str) -> dict[str, str]:
    drop = ("PYTHONDONTWRITEBYTECODE", "SELFFORGE_RESIDENT", "CI")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if code:
        env["PYTHONPATH"] = str(Path(code).resolve() / "src")
    if resident:
        env["SELFFORGE_RESIDENT"] = resident
    return env


def one(repo: Path, rng: str, env: dict[str, str], *flags: str) -> tuple[float, float]:
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


def resident(env: dict[str, str], action: str) -> None:
    command = [sys.executable, "-m", "selfforge", "resident", action]
    subprocess.run(command, capture_output=True, check=False, env=env)


def worker_cpu(repo: Path, rng: str, repeat: int) -> None:
    """The CPU time a resident's worker spends outside the runs (its own, and its
    children's: git), which waiting for a core on a loaded machine does not move: this
    process preloads selfforge as a resident does and forks a worker per call, whose
    measure_once is wrapped to tell the runs' CPU apart."""
    import gc

    from selfforge.cli import resident as resident_module

    command = resident_module.preload()
    gc.collect()
    gc.freeze()
    for _ in range(repeat):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _worker(command, repo, rng, write)
        os.close(write)
        while os.read(read, 65536):
            pass
        os.waitpid(pid, 0)


def _children() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _worker(command: object, repo: Path, rng: str, write: int) -> None:
    from selfforge.cli import resident as resident_module
    from selfforge.measure import sample

    inside = [0.0, 0.0]
    real = sample.measure_once

    def timed(*args: object, **kwargs: object) -> object:
        own, kids = time.process_time(), _children()
        try:
            return real(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            inside[0] += time.process_time() - own
            inside[1] += _children() - kids

    sample.measure_once = timed  # type: ignore[assignment]
    own, kids = time.process_time(), _children()
    sys.argv = ["selfforge", "measure", rng, "--repo", str(repo), "--json"]
    saved = os.dup(1)
    os.dup2(write, 1)
    code = resident_module._run(command, "selfforge")
    sys.stdout.flush()
    os.dup2(saved, 1)
    mine = time.process_time() - own - inside[0]
    git = _children() - kids - inside[1]
    print(f" worker CPU: outside the runs {mine:.3f} s own, {git:.3f} s git (its processes)")
    sys.stdout.flush()
    os._exit(code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-runs", type=int, default=8)
    parser.add_argument("--code", help="a selfforge source tree to measure (its src/)")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    default, own = environment(args.code, ""), environment(args.code, "0")
    with tempfile.TemporaryDirectory() as tmp:
        repo, base, tip = make_repo(Path(tmp), args.max_runs)
        rng = f"{base}..{tip}"
        one(repo, rng, own)  # warm: the worktrees made, bytecode written
        resident(default, "stop")
        rows_by = {
            "default": lambda: one(repo, rng, default),
            "resident": lambda: one(repo, rng, environment(args.code, "1")),
            "own process": lambda: one(repo, rng, own),
            "no sandbox": lambda: one(repo, rng, own, "--no-sandbox"),
        }
        for label, call in rows_by.items():
            if label == "resident":  # started by hand, its preloading done
                resident(default, "start")
                time.sleep(3)
            rows = [call() for _ in range(args.repeat)]
            for wall, runs in rows:
                print(
                    f"{label:>11}: wall {wall:6.2f} s  runs {runs:6.2f} s  "
                    f"overhead {wall - runs:5.2f} s"
                )
            median = statistics.median(w - r for w, r in rows)
            print(f"{label:>11}: median overhead {median:.2f} s (target <= 0.30 s)")
            if label == "resident":
                resident(default, "stop")
        if not args.code:
            worker_cpu(repo, rng, args.repeat)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
