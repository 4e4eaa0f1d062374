"""Why a test command cannot judge a change here, as a cause and a fix a user can act
on, for ``init``'s trial of each command it finds and ``doctor``'s test check.

The cause keeps the runner's own words (the module it could not import, the file that
imports it); the fix names what to run (``npm install``, ``pip install -e .``) rather
than "fix [checks] test", which is wrong advice when the command is right and the
project's environment is what is missing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIX_COMMAND = "fix [checks] test in selfforge.toml"
NO_RESULTS_FIX = (
    "set [checks] test to a command whose per-test results selfforge reads: pytest, "
    "`python -m unittest -v`, go test, cargo test, node --test, TAP or JUnit XML; or opt "
    'out with [checks] tests = "none"'
)
_CONFTEST = re.compile(r"ImportError while loading conftest '([^']+)'")
_MISSING = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'")
_PYTHON = re.compile(r"^(\S*python[\d.]*)\s+-m\s")
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
# a command that runs Node (a Python project may have a package.json for its front end)
_NODE = re.compile(r"(?:^|[\s/])(?:npm|npx|node|yarn|pnpm)\s")


@dataclass(frozen=True)
class Advice:
    said: str  # what went wrong, in the runner's words where it gave some
    fix: str


def of_probe(found: Any, command: str, root: Path, tree: Path) -> Advice | None:
    """The advice for one run of the test command (a ``baseline.Probe``); None when the
    suite ran and collected (failing tests are fine: they are what a run fixes)."""
    output = found.result.full_output or found.result.output
    errors = found.report.collect_errors if found.report is not None else {}
    if found.problem is None and not errors:
        return None
    if conftest := _CONFTEST.search(output):
        where = _relative(conftest.group(1), tree)
        why = _last_error_line(output[conftest.end() :])
        said = f"the test command `{command}` collects nothing: {where} cannot be imported ({why})"
        fix = _import_fix(output, command, root)
        return Advice(said, fix or f"fix {where}: it fails to import on the unmodified code")
    if found.problem is None:  # some modules collect, others do not: those hide tests
        first = next(iter(errors))
        why = _last_error_line(str(errors[first]))
        said = (
            f"{len(errors)} test module(s) cannot be collected on the unmodified code "
            f"({first}: {why})"
        )
        fix = _import_fix(str(errors[first]), command, root)
        return Advice(said, fix or "point the test command at your tests, or fix what they import")
    if _NODE.search(command) and (node := node_not_installed(root)):
        return node
    said, _, fix = str(found.problem).partition("; ")
    if "without per-test results" in said:  # the judge's long explanation, made short
        fix = NO_RESULTS_FIX
    return Advice(said, _import_fix(output, command, root) or fix or FIX_COMMAND)


def node_not_installed(root: Path) -> Advice | None:
    """A Node project whose packages are not installed yet (no node_modules): its test
    runner is not there, and a check cannot fetch it (no network)."""
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(package, dict) or (root / "node_modules").exists():
        return None
    names = [
        str(name)
        for key in ("devDependencies", "dependencies")
        if isinstance(package.get(key), dict)
        for name in package[key]
    ]
    if not names:
        return None
    lock = (root / "package-lock.json").exists()
    return Advice(
        f"node_modules is absent: the project's packages ({', '.join(names[:3])}"
        f"{', …' if len(names) > 3 else ''}) are not installed yet, its test runner among them",
        f"run `{'npm ci' if lock else 'npm install'}` here (checks have no network to fetch them)",
    )


def _import_fix(output: str, command: str, root: Path) -> str:
    """What to install when the tests import a module the environment lacks."""
    missing = _MISSING.search(output)
    if missing is None:
        return ""
    module = missing.group(1)
    python = m.group(1) if (m := _PYTHON.match(command)) else "python"
    top = module.split(".")[0]
    own = any((root / d / top).is_dir() or (root / d / f"{top}.py").is_file() for d in ("", "src"))
    if own or any((root / name).is_file() for name in _PROJECT_FILES):
        what = "the project itself" if own else "the project and the dependencies it declares"
        return f"`{python} -m pip install -e .` ({what}; `{module}` is missing)"
    return f"install what provides `{module}` for `{python}` (e.g. `{python} -m pip install {top}`)"


def _relative(path: str, tree: Path) -> str:
    try:
        return Path(path).relative_to(tree).as_posix()
    except ValueError:
        return Path(path).name


def _last_error_line(text: str) -> str:
    """The runner's first ``E   ...`` line (pytest's: the exception), else its last line,
    shortened."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    marked = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    line = marked[0] if marked else (lines[-1] if lines else "no output")
    return line[:200]
