"""The baseline, kept between runs: lint and tests on an unchanged tree are not rerun.

A run measures the baseline on HEAD before its first attempt. When nothing that decides
those results has changed since a run measured them — the same tree (by git's tree id),
the same checks and sandbox settings, the same judge code, the same interpreter and
installed packages, the same variables passed to the checks — the next run reuses them.
Entries older than ``MAX_AGE_S`` are measured again: tests that depend on the date or on
what the machine has are not trusted forever. The cache lives in ``.selfforge/`` (which
no check can see), written by this process only, as JSON (never pickle).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from selfforge.judge.rules.lint import LintFinding
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.command import CheckSpace, CommandResult
from selfforge.judge.verdict import Observed
from selfforge.repo import git

MAX_AGE_S = 12 * 3600
KEEP = 20  # entries kept; the oldest go first
JUDGE_DIR = Path(__file__).parent


def key(root: Path, commit: str, checks: Any, sandbox: Any, space: CheckSpace) -> str:
    """Everything that decides the baseline's results, hashed."""
    from selfforge.judge.sandbox.bwrap import check_env

    facts = {
        "tree": git.tree_of(root, commit),
        "checks": _plain(checks),
        "sandbox": _plain(sandbox),
        "space": repr(space),
        "judge": _judge_code(),
        "python": _installed(sys.executable),
        "commands": [_installed(str(root / w)) for w in _programs(checks)],
        "env": sorted(check_env(space.env_names).items()),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def load(state: Path, digest: str) -> tuple[Observed, float] | None:
    """The baseline measured under ``digest`` and when, or None (absent, stale, unreadable)."""
    path = state / "baseline-cache" / f"{digest}.json"
    try:
        data = json.loads(path.read_text())
        if time.time() - float(data["at"]) > MAX_AGE_S:
            return None
        return _observed(data["observed"]), float(data["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(state: Path, digest: str, observed: Observed) -> None:
    folder = state / "baseline-cache"
    folder.mkdir(parents=True, exist_ok=True)
    record = {"at": time.time(), "observed": _plain(observed)}
    tmp = folder / f".{digest}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(folder / f"{digest}.json")
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    for old in entries[:-KEEP]:
        old.unlink(missing_ok=True)


def describe(observed: Observed) -> str:
    """One line of what a baseline saw, for the step line of a cached one."""
    parts = []
    if observed.tests is not None:
        report = observed.tests
        parts.append(
            f"tests: {report.collected} collected, {len(report.passed)} passed, "
            f"{len(report.failing)} failed"
        )
    if observed.lint is not None:
        parts.append(f"lint: {len(observed.lint)} finding(s)")
    return "; ".join(parts) or "no checks"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):  # the directives' pydantic sections
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _observed(data: dict[str, Any]) -> Observed:
    lint = data.get("lint")
    return Observed(
        lint=None if lint is None else [LintFinding(**f) for f in lint],
        lint_result=_result(data.get("lint_result")),
        tests=None if data.get("tests") is None else TestReport(**data["tests"]),
        tests_result=_result(data.get("tests_result")),
        flaky=set(data.get("flaky") or ()),
    )


def _result(data: dict[str, Any] | None) -> CommandResult | None:
    return None if data is None else CommandResult(**data)


@functools.cache
def _judge_code() -> str:
    """The judge's own code, hashed once per process (a resident selfforge restarts when
    any of selfforge's files changes, so its answer is never stale)."""
    digest = hashlib.sha256()
    for path in sorted(JUDGE_DIR.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _programs(checks: Any) -> list[str]:
    words = f"{getattr(checks, 'test', '') or ''} {getattr(checks, 'lint', '') or ''}".split()
    return [w for w in words if w.startswith("/") or "/" in w]


def _installed(program: str) -> str:
    """A program and what it runs with: its mtime, and its environment's packages'."""
    path = Path(program)
    try:
        stamp = [str(path.resolve()), path.stat().st_mtime_ns]
    except OSError:
        return program
    for venv in (path.parent.parent, Path(sys.prefix)):
        for packages in venv.glob("lib/python*/site-packages"):
            stamp.append(packages.stat().st_mtime_ns)
    return json.dumps(stamp)
