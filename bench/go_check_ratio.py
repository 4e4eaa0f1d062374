"""What a warm `selfforge check` of a Go commit costs next to `go test` itself.

Clones REPO (a Go module) into a temporary folder, commits a selfforge.toml (`go test
./...`, lint `go vet ./...`, sandboxed as usual) and a one-line change, then measures:

    plain     `go test -count=1 ./...` with a warm build cache (the tests run, nothing is
              compiled anew: -count=1 keeps go from replaying a cached result)
    fresh     `go test ./...` right after the change, the cache warm from the commit
              before: what the user's own run costs (the changed package compiled,
              vetted, linked; a check pays that every time, since a candidate never
              writes the cache)
    check     `selfforge check HEAD` with its baseline cached and the repository's build
              cache filled (one check first, untimed, warms both), in a process of its
              own (SELFFORGE_RESIDENT=0)
    default   the same with selfforge's defaults: the first check (untimed) ran on its own
              and started a resident on its way out (private folder, stopped at the
              end); each later check is handed to it: no Python start-up per check

each the median of --runs, and their ratios. Target (issue 41 point 5): the warm check
<= 2x plain, `go test -count=1 ./...` (issue 33's was <= 2x fresh). selfforge runs with its bytecode
written as an installed selfforge has it (PYTHONDONTWRITEBYTECODE, where set, is
dropped for it: with it every check would compile selfforge's ~120 modules anew). The
load average before and after is printed: on a shared machine it moves every figure.

    python bench/go_check_ratio.py --repo PATH_TO_GO_MODULE [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}
DIRECTIVES = """[goals]
items = ["All tests pass"]

[checks]
test = "go test ./..."
lint = "go vet ./..."
reruns = 0
"""


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return took


def prepare(source: Path, work: Path) -> Path:
    clone = work / "clone"
    env = {**os.environ, **IDENTITY}
    subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True, env=env)
    (clone / "selfforge.toml").write_text(DIRECTIVES)
    subprocess.run(["git", "add", "selfforge.toml"], cwd=clone, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "selfforge"], cwd=clone, check=True, env=env)
    run(["go", "test", "-count=1", "./..."], clone, _cache(work / "base-cache"))
    # the change: a new exported function in the first non-test Go file (its package is
    # compiled anew, every test of it runs)
    target = sorted(p for p in clone.rglob("*.go") if not p.name.endswith("_test.go"))[0]
    with target.open("a") as f:
        f.write("\n// BenchChange is the bench's change.\nfunc BenchChange() int { return 1 }\n")
    subprocess.run(["git", "commit", "-qam", "bench change"], cwd=clone, check=True, env=env)
    return clone


def _cache(path: Path) -> dict[str, str]:
    return {**os.environ, "GOCACHE": str(path), "GOFLAGS": ""}


def _selfforge_env(resident_dir: Path | None) -> dict[str, str]:
    drop = ("PYTHONDONTWRITEBYTECODE", "SELFFORGE_RESIDENT", "CI")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if resident_dir is None:
        return {**env, "SELFFORGE_RESIDENT": "0"}
    return {**env, "SELFFORGE_RESIDENT_DIR": str(resident_dir)}  # the defaults


@contextlib.contextmanager
def _resident(selfforge: list[str], clone: Path, folder: Path) -> Iterator[dict[str, str]]:
    """selfforge's defaults in a socket folder of their own: a first check runs on its own
    and starts a resident, which a second (untimed) check warms; stopped at the end.
    Yields the environment that reaches it."""
    env = _selfforge_env(folder)
    run([*selfforge, "check", "HEAD"], clone, env)
    status = [*selfforge, "resident", "status"]
    deadline = time.monotonic() + 60
    while subprocess.run(status, cwd=clone, env=env, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            sys.exit("the first check started no resident within 60 s")
        time.sleep(0.1)
    try:
        run([*selfforge, "check", "HEAD"], clone, env)
        yield env
    finally:
        subprocess.run([*selfforge, "resident", "stop"], cwd=clone, env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="go-check-ratio-") as tmp:
        clone = prepare(args.repo.resolve(), Path(tmp))
        selfforge = [sys.executable, "-m", "selfforge"]
        own = _selfforge_env(None)
        listed = subprocess.run(["git", "ls-files", "*_test.go"], cwd=clone, capture_output=True)
        tests = len(listed.stdout.split())
        gocache = _cache(Path(tmp) / "go-build")
        run(["go", "test", "-count=1", "./..."], clone, gocache)  # warms the user's cache
        run([*selfforge, "check", "HEAD"], clone, own)  # baseline cached, build cache filled
        plain, fresh, check, resident = [], [], [], []
        # each run measures all four in turn: a load that moves moves them alike
        with _resident(selfforge, clone, Path(tmp) / "resident") as served:
            for i in range(args.runs):
                plain.append(run(["go", "test", "-count=1", "./..."], clone, gocache))
                sample = Path(tmp) / f"fresh-{i}"
                shutil.copytree(Path(tmp) / "base-cache", sample, symlinks=True)
                fresh.append(run(["go", "test", "./..."], clone, _cache(sample)))
                check.append(run([*selfforge, "check", "HEAD"], clone, own))
                resident.append(run([*selfforge, "check", "HEAD"], clone, served))
        p, f, c, r = (statistics.median(x) for x in (plain, fresh, check, resident))
        print(f"repository        {args.repo.name} ({tests} test files)")
        print(f"plain go test     {p:.2f} s (go test -count=1 ./..., warm build cache)")
        print(f"fresh go test     {f:.2f} s (go test ./... after the change)")
        print(f"selfforge check   {c:.2f} s (warm, in its own process; samples {_shown(check)})")
        print(
            f"  by default      {r:.2f} s (warm, through the resident the first check started;"
            f" samples {_shown(resident)})"
        )
        print(f"ratio             {c / p:.2f}x plain, {c / f:.2f}x fresh (target <= 2x plain)")
        print(f"  by default      {r / p:.2f}x plain, {r / f:.2f}x fresh")
        print(f"load average      {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
        shutil.rmtree(clone / ".selfforge", ignore_errors=True)


def _shown(samples: list[float]) -> str:
    return "  ".join(f"{t:.2f}" for t in samples)


if __name__ == "__main__":
    main()
