"""Benchmark: index a large code base nobody on this project wrote, cold and warm.

The installed Python standard library (without site-packages and caches) is copied to
a temporary directory and made a git repository. Each phase runs in a fresh process so
its time and peak memory are its own:

  cold        empty .selfforge/, every file parsed
  warm        nothing changed
  warm+1      one file changed
  map         the repo map and file choice for a task (index already warm)

Aim: cold under 20 s, warm+1 under 0.5 s on 2 cores. Prints figures; asserts nothing.
Run: .venv/bin/python bench/index.py
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from selfforge.repo.git import git

SKIP = shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc")
CHANGED = "json/decoder.py"


def make_repo(target: Path) -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(stdlib, target, ignore=SKIP, symlinks=True)
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env |= {"GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "stdlib"]):
        git(*args, cwd=target, env=env)
    return target


def phase(repo: Path, name: str) -> dict[str, object]:
    """Run one phase in a child process; return its figures."""
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, str(repo)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_phase(name: str, repo: Path) -> None:
    from selfforge.context.build import map_for_task
    from selfforge.context.index import open_index

    state = repo / ".selfforge"
    figures: dict[str, object] = {"phase": name}
    if name == "map":
        started = time.perf_counter()
        view = map_for_task(
            repo, state_dir=state, token_budget=2048, task="JSONDecoder.raw_decode skips BOM"
        )
        figures |= {"seconds": time.perf_counter() - started, "top": view.files[:3]}
    else:
        if name == "warm+1":
            with (repo / CHANGED).open("a") as handle:
                handle.write("\n# touched by the benchmark\n")
        index = open_index(state)
        stats = index.update(repo)
        figures |= {
            "seconds": stats.seconds,
            "files": stats.files,
            "parsed": stats.parsed,
            "definitions": stats.definitions,
            "db_mb": round((state / "index.db").stat().st_size / 2**20, 1),
        }
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    figures["cpu_s"] = round(own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, 1)
    # ru_maxrss is in KiB on Linux; workers are children of this process.
    figures["peak_mb_main"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    figures["peak_mb_worker"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    print(json.dumps(figures))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="selfforge-bench-index-") as tmp:
        repo = make_repo(Path(tmp) / "stdlib")
        tracked = git("ls-files", cwd=repo).count("\n")
        python_files = sum(1 for _ in repo.rglob("*.py"))
        print(
            f"repository: Python {sys.version.split()[0]} standard library, "
            f"{tracked} tracked files ({python_files} .py)"
        )
        # Other work on the machine slows the wall clock; CPU seconds do not change.
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        for name in ("cold", "warm", "warm+1", "map"):
            figures = phase(repo, name)
            extra = ", ".join(
                f"{k}={v}" for k, v in figures.items() if k not in ("phase", "seconds")
            )
            print(f"{name:7} {figures['seconds']:8.3f} s   {extra}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--phase":
        run_phase(sys.argv[2], Path(sys.argv[3]))
    else:
        main()
