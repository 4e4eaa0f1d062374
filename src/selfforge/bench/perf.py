"""``bench mine --kind perf``: performance commits found in the user's own history
(issue 42, point 8). Each candidate commit (newest first; optionally only those whose
subject names speed: fast, speed, perf, optimi…) is measured against its parent with the
declared measures, exactly as ``selfforge measure PARENT..COMMIT`` does (interleaved runs,
the base's ruler, measure/revisions.py and measure/stats.py); a commit that some measure
calls ``improved`` (beyond its min_change) is an instance, written as a JSON line with
the directives it was measured by, for ``bench run`` to replay (perf_replay.py), if its
own suite passes at it (the test command of the directives, run at the commit, as
SWE-bench validates its gold): a commit that breaks its own tests can never be gold.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from selfforge.bench.mine import CODE_SUFFIXES
from selfforge.bench.testrun import Suite, TestOutcome, resolve_command, run_tests
from selfforge.config import Directives, Measure, load_directives, measure_files
from selfforge.errors import UsageError
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.measure import stats
from selfforge.measure.revisions import SLOTS, chosen, sides
from selfforge.measure.sample import MeasureError, compare
from selfforge.repo.git import git
from selfforge.repo.testpaths import rule_for
from selfforge.repo.workspace import Workspace

KIND = "perf"
SPEED_WORDS = ("fast", "speed", "perf", "optimi", "quick", "slow", "cache", "latency")


class PerfInstance(BaseModel):
    """A commit whose declared measure improved from its parent, and how it was found."""

    kind: Literal["perf"] = KIND
    instance_id: str
    repo: str  # where it was mined from (a path `git clone` accepts)
    commit: str
    parent: str
    message: str
    measures: list[str]  # the measures it improved: a replay's goal
    directives: str  # the selfforge.toml the measures were declared in, as mined
    figures: list[dict[str, object]] = Field(default_factory=list)  # measure --json's
    code_files: list[str]
    test_files: list[str]
    mine_s: float = 0.0  # the comparison's wall time when mined


def candidates(
    root: Path, limit: int | None, words: Iterable[str] | None, skip: set[str]
) -> list[tuple[str, str, str]]:
    """(commit, parent, subject) of non-merge commits newest first, at most ``limit``
    of them, each with a subject holding one of ``words`` when given."""
    out = git("log", "--no-merges", "--format=%H %P%x09%s", "HEAD", cwd=root)
    found = []
    wanted = [w.lower() for w in words or []]
    for line in out.splitlines():
        shas, _, subject = line.partition("\t")
        parts = shas.split()
        if len(parts) != 2 or parts[0] in skip:
            continue
        if wanted and not any(w in subject.lower() for w in wanted):
            continue
        found.append((parts[0], parts[1], subject))
        if limit is not None and len(found) >= limit:
            break
    return found


def mine_perf(
    repo: Path,
    names: list[str],
    *,
    limit: int | None = None,
    words: Iterable[str] | None = None,
    min_change: float | None = None,
    no_sandbox: bool = False,
    on_commit: Callable[[str, str], None] | None = None,
) -> tuple[list[PerfInstance], list[str]]:
    """The instances of ``repo``'s history, and a line per commit that made none (why).
    ``names``: the measures to use (default: every declared one); ``min_change``: a
    threshold for them all instead of each one's own. Each instance's own suite runs
    within the directives' ``[checks] timeout_s``."""
    from selfforge.run.engine import check_space

    ws = Workspace(repo)
    loaded = load_directives(ws.root)
    if loaded.path is None:
        raise UsageError(
            f"no selfforge.toml in {ws.root}: declare the [[measures]] to mine by "
            "(docs/guides/measured-goals.md)"
        )
    d = loaded.directives
    measures = chosen(d, names)
    if min_change is not None:
        measures = [m.model_copy(update={"min_change": min_change}) for m in measures]
    space = check_space(d, ws.root, no_sandbox)
    rule = rule_for(ws.root)
    ruler = set(measure_files(d))
    checks = d.checks
    command = resolve_command(checks.test or "python -m pytest")
    suite = Suite(command, checks.runner, checks.junit, checks.setup)
    limit_s = float(checks.timeout_s)
    found: list[PerfInstance] = []
    skipped: list[str] = []
    for commit, parent, subject in candidates(ws.root, limit, words, set()):
        changed = git("diff", "--name-only", "--no-renames", parent, commit, cwd=ws.root).split()
        tests = [f for f in changed if rule.is_test_path(f)]
        code = [
            f
            for f in changed
            if f not in tests and f not in ruler and PurePosixPath(f).suffix in CODE_SUFFIXES
        ]
        why = None if code else "changes no code (only tests, docs or the measure's files)"
        instance = None
        if why is None:
            instance, why = _measure_one(ws, d, space, measures, commit, parent)
        if instance is not None:
            why = own_tests_fail(ws, suite, commit, limit_s)
            instance = None if why else instance
        if instance is not None:
            found.append(
                PerfInstance(
                    instance_id=f"{ws.root.name}-{commit[:10]}",
                    repo=str(ws.root),
                    commit=commit,
                    parent=parent,
                    message=git("log", "-1", "--format=%B", commit, cwd=ws.root).strip(),
                    measures=instance[0],
                    directives=loaded.text or "",
                    figures=instance[1],
                    code_files=code,
                    test_files=tests,
                    mine_s=instance[2],
                )
            )
        else:
            skipped.append(f"{commit[:10]} {subject[:60]}: {why}")
        if on_commit is not None:
            on_commit(commit, "instance" if instance else why or "")
    return found, skipped


Found = tuple[list[str], list[dict[str, object]], float]  # improved, figures, seconds


def _measure_one(
    ws: Workspace,
    d: Directives,
    space: CheckSpace,
    measures: list[Measure],
    commit: str,
    parent: str,
) -> tuple[Found | None, str | None]:
    """``parent..commit`` compared as ``selfforge measure`` compares it, one measure at a
    time: a measure that cannot run on one side (a benchmark the parent lacks) is noted
    in the figures, and the others still decide (an instance of each that improved)."""
    started = time.monotonic()
    found = []
    failed: list[tuple[str, str]] = []  # measure, why it could not run
    with ws.locked("selfforge bench mine --kind perf"):
        try:
            a, b = sides(ws, d, parent, commit)
            for measure in measures:
                try:
                    found += compare([measure], d, a, b, space, ws.root)
                except MeasureError as exc:
                    failed.append((measure.name, f"{measure.name}: not measured: {exc.message}"))
        except MeasureError as exc:
            return None, f"not measured: {exc.message}"
        finally:
            ws.remove_worktrees()
    seconds = round(time.monotonic() - started, 3)
    improved = [c.name for c in found if c.verdict == stats.IMPROVED]
    if not improved:
        return None, "; ".join([*(c.describe() for c in found), *(why for _, why in failed)])
    figures = [c.to_json() for c in found]
    figures += [{"name": name, "verdict": "not measured", "error": why} for name, why in failed]
    return (improved, figures, seconds), None


def own_tests_fail(ws: Workspace, suite: Suite, commit: str, timeout_s: float) -> str | None:
    """Why ``commit``'s own suite does not pass at it (its test command, run in a
    worktree of the commit, sandboxed like every check), or None when it passes."""
    with ws.locked("selfforge bench mine --kind perf"):
        try:
            tree = ws.create_worktree(SLOTS[1], commit)  # reset: the commit's own ruler
            ran = run_tests(tree, suite, [], timeout_s)
        finally:
            ws.remove_worktrees()
    if ran.exit_code == 0 and ran.complete:
        return None
    return f"its own tests fail at {commit[:10]}: {_failure(ran)}"


def _failure(ran: TestOutcome) -> str:
    """What failed, in a line: the failing tests' ids, else the output's last line."""
    failed = sorted(t for t, o in ran.outcomes.items() if o in ("failed", "error"))
    if failed:
        more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
        return f"{', '.join(failed[:3])}{more} failed"
    lines = [x.strip() for x in ran.output.splitlines() if x.strip()]
    code = "timed out" if ran.exit_code is None else f"exit {ran.exit_code}"
    return f"{code}: {lines[-1][:200]}" if lines else code


def write_perf(path: Path, instances: list[PerfInstance]) -> None:
    text = "".join(i.model_dump_json() + "\n" for i in instances)
    path.write_text(text, encoding="utf-8")


def is_perf_file(path: Path) -> bool:
    """Whether ``path`` holds perf instances (its first line says kind = perf)."""
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
        return json.loads(first).get("kind") == KIND
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return False


def read_perf(path: Path) -> list[PerfInstance]:
    if not path.is_file():
        raise UsageError(f"no instances file {path}; write one with `selfforge bench mine`")
    found = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append(PerfInstance.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise UsageError(f"{path}:{n}: not a perf instance: {first['msg']}") from None
    return found


__all__ = ["PerfInstance", "is_perf_file", "mine_perf", "own_tests_fail", "read_perf"]
