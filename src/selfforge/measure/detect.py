"""The measures ``selfforge init`` proposes from what a project has: pytest-benchmark in
its dependencies or a benchmarks folder (Python), Go ``Benchmark*`` functions, a lint
command. Written into selfforge.toml commented out: a measure makes ``check`` measure
every change, which the user chooses by uncommenting it (``selfforge doctor`` then runs
each once)."""

from __future__ import annotations

import re
from pathlib import Path

_BENCH_FOLDERS = ("benchmarks", "benchmark", "bench", "benches")
_DEPENDENCY_FILES = ("pyproject.toml", "requirements-dev.txt", "requirements.txt", "setup.cfg")
_GO_BENCH = re.compile(r"^func Benchmark\w*\(\w+ \*testing\.B\)", re.M)
_SKIPPED = {".git", "node_modules", "vendor", ".venv", "venv", "target"}


def proposals(root: Path, python: str, lint: str | None) -> list[str]:
    """TOML tables, one per measure found (not commented yet)."""
    found = []
    if _uses_pytest_benchmark(root):
        folder = next((f for f in _BENCH_FOLDERS if (root / f).is_dir()), "")
        command = f"{python} -m pytest -q --benchmark-only {folder}".strip()
        found.append(_table("benchmarks", "pytest-benchmark", command))
    elif folder := next((f for f in _BENCH_FOLDERS if _python_scripts(root / f)), ""):
        script = _python_scripts(root / folder)[0]
        found.append(
            _table("benchmark", "command", f"{python} {script.relative_to(root).as_posix()}")
            + '# the script prints the number (its last one); unit = "ms"\n'
        )
    if (root / "go.mod").is_file() and _go_benchmarks(root):
        found.append(_table("go-bench", "go-bench", None))
    if lint:
        found.append(_table("lint", "lint", None))
    return found


def commented(tables: list[str]) -> str:
    """The block init appends to selfforge.toml: each table commented out."""
    if not tables:
        return ""
    lines = [
        "",
        "# Measures selfforge found (docs/guides/measured-goals.md): uncomment one to have",
        "# `selfforge measure` print it and `selfforge check` report how a change moves it.",
    ]
    for table in tables:
        lines += [""] + [f"# {line}" for line in table.rstrip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def _table(name: str, kind: str, command: str | None) -> str:
    text = f'[[measures]]\nname = "{name}"\n'
    if kind != "command":
        text += f'kind = "{kind}"\n'
    if command:
        text += f"command = {_quoted(command)}\n"
    return text


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _uses_pytest_benchmark(root: Path) -> bool:
    for name in _DEPENDENCY_FILES:
        path = root / name
        if path.is_file() and "pytest-benchmark" in path.read_text(errors="replace"):
            return True
    return False


def _python_scripts(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith(("_", "test_")))


def _go_benchmarks(root: Path) -> bool:
    for path in root.rglob("*_test.go"):
        if _SKIPPED.intersection(path.relative_to(root).parts):
            continue
        if _GO_BENCH.search(path.read_text(errors="replace")):
            return True
    return False
