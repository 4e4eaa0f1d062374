"""What a warm `selfforge check` of a Go commit costs next to `go test` itself.

Clones REPO (a Go module) into a temporary folder, commits a selfforge.toml (`go test
./...`, lint `go vet ./...`, sandboxed as usual) and a one-line change, then measures:

    plain  `go test -count=1 ./...` with a warm build cache (the tests run, nothing is
           compiled anew: -count=1 keeps go from replaying a cached result)
    fresh  `go test ./...` right after the change, the cache warm from the commit before
           (what the user pays once: the changed package compiled, vetted, linked; a
           check pays that every time, since a candidate never writes the cache)
    check  `selfforge check HEAD` with its baseline cached and the repository's build
           cache filled (one check first, untimed, warms both)

each the median of --runs, and their ratio. Target: check <= 2x plain.

    python bench/go_check_ratio.py --repo PATH_TO_GO_MODULE [--runs 3]
"""

from __future__ import annotations

import argparse
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="go-check-ratio-") as tmp:
        clone = prepare(args.repo.resolve(), Path(tmp))
        selfforge = [sys.executable, "-m", "selfforge"]
        listed = subprocess.run(["git", "ls-files", "*_test.go"], cwd=clone, capture_output=True)
        tests = len(listed.stdout.split())
        gocache = _cache(Path(tmp) / "go-build")
        run(["go", "test", "-count=1", "./..."], clone, gocache)  # warms the user's cache
        run([*selfforge, "check", "HEAD"], clone)  # baseline cached, build cache filled
        plain, fresh, check = [], [], []
        for i in range(args.runs):
            plain.append(run(["go", "test", "-count=1", "./..."], clone, gocache))
            sample = Path(tmp) / f"fresh-{i}"
            shutil.copytree(Path(tmp) / "base-cache", sample, symlinks=True)
            fresh.append(run(["go", "test", "./..."], clone, _cache(sample)))
            check.append(run([*selfforge, "check", "HEAD"], clone))
        p, f, c = (statistics.median(x) for x in (plain, fresh, check))
        shown = "  ".join(f"{t:.2f}" for t in check)
        print(f"repository        {args.repo.name} ({tests} test files)")
        print(f"plain go test     {p:.2f} s (go test -count=1 ./..., warm build cache)")
        print(f"fresh go test     {f:.2f} s (go test ./... after the change)")
        print(f"selfforge check   {c:.2f} s (warm; samples {shown})")
        print(f"ratio             {c / p:.2f}x plain, {c / f:.2f}x fresh (target <= 2x)")
        shutil.rmtree(clone / ".selfforge", ignore_errors=True)


if __name__ == "__main__":
    main()
