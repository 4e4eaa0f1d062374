"""What measuring the changed lines' coverage adds to a judged test run (issue 41,
point 3): the same sandboxed run of the judge (``run_tests``) with and without
``coverage_of``, on small projects this script writes (Python and pytest, Go), one
changed file measured as in a check.

    python bench/coverage_cost.py [--runs 5] [--tests 400] [--kinds python,go]

Prints, per kind, the median seconds of each (runs alternate, after one warm-up of
each) and what the measure adds. The Python suite calls the changed module's functions
and every other module's in a loop, so a tracer's cost on calls outside the measured
file shows too.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.sandbox.command import run_tests
from selfforge.repo import git

IDENTITY = ["-c", "user.name=b", "-c", "user.email=b@b"]


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *IDENTITY, "commit", "-qm", "x"], cwd=root, check=True)
    return root


def python_project(root: Path, tests: int) -> tuple[Path, str, list[str]]:
    files = {}
    for m in range(10):
        files[f"pkg/mod{m}.py"] = "".join(
            f"def f{i}(x):\n    total = 0\n    for k in range(x):\n        total += k\n"
            f"    return total\n\n\n"
            for i in range(20)
        )
    files["pkg/__init__.py"] = ""
    for t in range(tests):
        m = t % 10
        files[f"tests/test_{t // 50}.py"] = files.get(f"tests/test_{t // 50}.py", "") + (
            f"from pkg import mod{m}\n\n\ndef test_{t}():\n"
            f"    assert sum(mod{m}.f{t % 20}(50) for _ in range(200)) > 0\n\n\n"
        )
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    return _repo(root, files), command, ["pkg/mod0.py"]


def go_project(root: Path, tests: int) -> tuple[Path, str, list[str]]:
    files = {"go.mod": "module example.com/b\n\ngo 1.19\n"}
    for p in range(4):
        files[f"p{p}/p.go"] = f"package p{p}\n\n" + "".join(
            f"func F{i}(x int) int {{\n\tt := 0\n\tfor k := 0; k < x; k++ {{\n\t\tt += k\n\t}}\n"
            f"\treturn t\n}}\n\n"
            for i in range(20)
        )
        files[f"p{p}/p_test.go"] = f'package p{p}\n\nimport "testing"\n\n' + "".join(
            f"func Test{t}(t *testing.T) {{\n"
            f"\tif F{t % 20}(50) <= 0 {{\n\t\tt.Fatal()\n\t}}\n}}\n\n"
            for t in range(tests // 4)
        )
    return _repo(root, files), "go test ./...", ["p0/p.go"]


def _time(root: Path, command: str, space: CheckSpace, files: list[str] | None) -> float:
    started = time.monotonic()
    result, report = run_tests(command, root, 600, space, coverage_of=files)
    assert result.exit_code == 0, result.output
    if files:
        assert report is not None and report.coverage is not None, "nothing measured"
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tests", type=int, default=400)
    parser.add_argument("--kinds", default="python,go")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="coverage-cost-"))
    try:
        for kind in args.kinds.split(","):
            if kind == "go" and shutil.which("go") is None:
                print("go: skipped (no go toolchain)")
                continue
            make = python_project if kind == "python" else go_project
            root, command, files = make(work / kind, args.tests)
            space = CheckSpace(repo=root, git_common_dir=git.common_dir(root))
            _time(root, command, space, None), _time(root, command, space, files)  # warm-up
            plain, measured = [], []
            for _ in range(args.runs):
                plain.append(_time(root, command, space, None))
                measured.append(_time(root, command, space, files))
            a, b = statistics.median(plain), statistics.median(measured)
            print(
                f"{kind}: plain {a:.2f} s, with coverage {b:.2f} s "
                f"(+{b - a:.2f} s, {b / a:.2f}x; {args.runs} runs each)"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
