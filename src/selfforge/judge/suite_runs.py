"""How the stages run a command on a candidate's tree: restored to the candidate's commit
before and after, journaled, with the focused first pass over the tests a change reaches
and the step line's summary (the flaky reruns, which use these runs: judge/flaky.py). A run
may be made ahead of its stage (``RunAhead``: a cold ``selfforge check`` runs the judged
commit's suite while the base's runs); the stage then takes it instead of running it."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from selfforge.context import blast_radius
from selfforge.judge import coverage, gates
from selfforge.judge.candidate import Candidate, Judge, RunKey, TestRun
from selfforge.judge.runners import registry
from selfforge.judge.runners.base import Adapter
from selfforge.judge.runners.results import TestReport
from selfforge.judge.sandbox.command import CommandResult, run_command, run_tests
from selfforge.judge.stage_log import named
from selfforge.judge.verdict import PASS, Observed, Verdict
from selfforge.repo import git
from selfforge.repo.testpaths import rule_for
from selfforge.repo.treefiles import remove_special_files

if TYPE_CHECKING:
    from collections.abc import Callable

    from selfforge.judge.sandbox.command import CheckSpace

# The runs that measure which changed lines the tests execute (judge/coverage.py): the
# full run of the change's own suite (its commit, its tests), never the judging run of the
# base's tests where that is another (one measured run per check: a tracer costs), a
# focused pass or a flaky rerun.
COVERAGE_RUNS = ("tests", "tests:new")


def restore(tree: Path, commit: str) -> None:
    """Put the tree back to exactly ``commit``: tracked files rewritten (a symlink or FIFO
    a check put in a file's place is replaced, never written through), every untracked and
    ignored file removed. Nothing selfforge needs lives in a worktree (its git dir is a
    ``.git`` file pointing into the repository's own, which clean leaves alone)."""
    git.git("read-tree", "-u", "--reset", commit, cwd=tree)
    git.git("clean", "-q", "-ffdx", cwd=tree)
    remove_special_files(tree)


def shown(j: Judge, name: str, verdict: Verdict) -> Verdict:
    if not verdict.ok:
        j.record.step(name, False, verdict.reason)
    return verdict


def run_check(c: Candidate, j: Judge, name: str, command: str) -> CommandResult:
    j.record.begin(name)
    restore(c.tree, c.commit)
    try:
        return run_command(
            command,
            c.tree,
            j.directives.checks.timeout_s,
            j.space,
            on_start=j.record.on_start,
            head=c.commit,
        )
    finally:
        restore(c.tree, c.commit)  # nothing the check left reaches selfforge's reads


def run_key(
    tree: Path,
    commit: str,
    command: str,
    only: list[str] | None = None,
    ignore: list[str] | None = None,
) -> RunKey:
    return (
        str(tree),
        git.tree_of(tree, commit),
        command,
        tuple(only) if only else None,
        tuple(ignore) if ignore else None,
    )


def ran_ahead(c: Candidate, command: str, commit: str) -> bool:
    """Is the full run of ``command`` at ``commit`` already made (RunAhead)?"""
    return bool(c.ahead) and run_key(c.tree, commit, command) in c.ahead


@dataclass(frozen=True)
class RunSettings:
    timeout_s: float
    space: CheckSpace
    on_start: Callable[[int | None], None] | None = None
    coverage_of: tuple[str, ...] = ()  # the changed code files whose lines it measures
    repeat: dict[str, tuple[int, str]] | None = None  # run_tests' ``repeat``


def _run_on_tree(
    tree: Path,
    commit: str,
    back_to: str,
    command: str,
    settings: RunSettings,
    only: list[str] | None = None,
    ignore: list[str] | None = None,
) -> TestRun:
    restore(tree, commit)
    adapter = registry.for_space(settings.space, command, tree)
    if ignore and not adapter.can_ignore():  # a runner that cannot leave a file out
        for path in ignore:
            (tree / path).unlink(missing_ok=True)
        ignore = None
    started_at = time.time()
    try:
        result, report = run_tests(
            command,
            tree,
            settings.timeout_s,
            settings.space,
            on_start=settings.on_start,
            only=only,
            ignore=ignore,
            head=commit,
            adapter=adapter,
            coverage_of=list(settings.coverage_of) if not only else None,
            repeat=settings.repeat if only and adapter.repeats() else None,
        )
    finally:
        # What the tests left (a symlink to ~/.ssh in place of a source file, a FIFO)
        # never reaches a prompt, a stage or a later round: selfforge reads this tree.
        restore(tree, back_to)
    return TestRun(result, report, started_at)


def run_test_command(
    c: Candidate,
    j: Judge,
    name: str,
    command: str,
    only: list[str] | None = None,
    ignore: list[str] | None = None,
    commit: str | None = None,
    repeat: dict[str, tuple[int, str]] | None = None,
) -> tuple[CommandResult, TestReport | None]:
    """Run and journal a test command on the candidate's tree at ``commit`` (the
    candidate's own unless told), or take the same run made ahead; the caller reports
    the step once it is judged. ``repeat``: run_tests', where the runner can."""
    j.record.begin(name)
    commit = commit or c.commit
    ran = c.ahead.pop(run_key(c.tree, commit, command, only, ignore), None) if c.ahead else None
    if ran is None:
        # the change's own suite: the tests run, or tests:new where the two differ
        own = name in COVERAGE_RUNS and not only and commit == c.commit
        measure = coverage_files(c.tree, c.base, c.commit, command, j.space) if own else ()
        settings = RunSettings(
            j.directives.checks.timeout_s, j.space, j.record.on_start, measure, repeat
        )
        ran = _run_on_tree(c.tree, commit, c.commit, command, settings, only, ignore)
    result, report = ran.result, ran.report
    summary = report.summary() if report else {}
    j.record.check(
        c,
        name,
        command,
        result.exit_code,
        result.exit_code == 0,
        result,
        result.output,
        summary,
        show=False,
        started_at=ran.started_at,
    )
    return result, report


class RunAhead:
    """The full run of a test command on ``tree`` at ``commit``, started in a thread ahead
    of its stage (a cold ``selfforge check``: while the base's suite runs in the baseline's
    worktree). Only that thread touches ``tree`` until ``join``, and it journals nothing
    (the journal's connection is the main thread's): the stage that asks for the same run
    takes it from ``join`` and journals it. A run that raised is simply not there: the
    stage runs it again and says why. ``cancel`` kills it (an error in the main thread)."""

    def __init__(
        self,
        tree: Path,
        commit: str,
        back_to: str,
        command: str,
        timeout_s: float,
        space: CheckSpace,
    ) -> None:
        self.key = run_key(tree, commit, command)
        self._run: TestRun | None = None
        self._group: int | None = None
        self._cancelled = False
        self._lock = threading.Lock()
        measure: tuple[str, ...] = ()
        with contextlib.suppress(git.GitError):  # a candidate's parent is its base
            if commit == back_to:  # the change's own suite (COVERAGE_RUNS)
                base = git.git("rev-parse", f"{back_to}^", cwd=tree).strip()
                measure = coverage_files(tree, base, back_to, command, space)
        settings = RunSettings(timeout_s, space, self._started, measure)
        work = (tree, commit, back_to, command, settings)
        self._thread = threading.Thread(
            target=self._work, args=work, name="selfforge-ahead", daemon=True
        )
        self._thread.start()

    def _work(self, *work: object) -> None:
        with contextlib.suppress(Exception):
            self._run = _run_on_tree(*work)  # type: ignore[arg-type]

    def _started(self, group: int | None) -> None:
        with self._lock:
            self._group = group
            if group and self._cancelled:  # cancelled while it was starting
                _kill(group)

    def join(self) -> dict[RunKey, TestRun]:
        self._thread.join()
        return {self.key: self._run} if self._run is not None and not self._cancelled else {}

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._group:
                _kill(self._group)
        self._thread.join()


def coverage_files(
    tree: Path, base: str, commit: str, command: str, space: CheckSpace
) -> tuple[str, ...]:
    """The change's code files whose lines a full run measures (judge/coverage.py)."""
    adapter = registry.for_space(space, command, tree)
    if not adapter.coverage_tool:
        return ()
    return tuple(coverage.code_files(tree, base, commit, adapter, rule_for(tree)))


def _kill(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def can_run_ahead(command: str, root: Path, base: str) -> bool:
    """May this command's run on a candidate of ``base`` share the time of the base's?
    Not one that reads a build cache the base's run is writing (buildcache.py): cargo's
    copy of the target dir could be torn, and its freshness is by mtimes (the candidate's
    files must be written after the base's build); go's links into GOCACHE could name
    entries the base's run has not finished (a go check failed '[setup failed]')."""
    for tool, manifest in (("cargo", "Cargo.toml"), ("go", "go.mod")):
        if tool in command and git.ok("cat-file", "-e", f"{base}:{manifest}", cwd=root):
            return False
    return True


# A person's commit (``check``) is mostly right: a first pass only saves time when it
# rejects, and costs a process start, a collection and the blast radius when it does not.
# On a suite shorter than this, those cost more than an early rejection could save.
PERSON_FIRST_PASS_S = 10.0


def focused_tests(
    c: Candidate, j: Judge, new_tests: list[str], adapter: Adapter | None = None
) -> list[str]:
    """Tests near the change, worth a first pass only when much faster than the suite:
    test files for pytest, test ids for a runner that selects tests by name (``go test
    -run``, ``cargo test --exact``), chosen by the file or package that holds them."""
    if adapter is not None and adapter.reports_through_channel:
        adapter = None  # pytest: by test file
    base = j.baseline.tests
    total = sum(base.durations.values()) if base is not None else 0.0
    if base is not None and not total and adapter is not None and j.baseline.tests_result:
        total = j.baseline.tests_result.duration_s  # libtest times no single test
    if base is None or total <= 2.0:  # a suite this quick gains nothing from a first pass
        return []
    if j.person and total < PERSON_FIRST_PASS_S:
        return []
    radius = blast_radius(c.tree, list(c.changed), state_dir=j.state_dir)
    if adapter is not None:
        reached = {*radius.tests, *radius.modules, *c.changed}
        reached |= {PurePosixPath(p).parent.as_posix() for p in reached}
        ids = [t for t in base.outcomes if adapter.owner(t, c.tree) in reached]
        timed = sum(base.durations.get(t, 0.0) for t in base.outcomes)
        if timed > 0:
            share = sum(base.durations.get(t, 0.0) for t in ids) / timed
        else:  # no per-test times (libtest; go's 0.00s tests): the share of the tests
            share = len(ids) / max(len(base.outcomes), 1)
        # A change that reaches every package would run the whole suite twice.
        return ids if ids and share < 0.5 and len(ids) < len(base.outcomes) else []
    # only the files the base's run collected: the blast radius also names other
    # languages' test files (a Go or JS sample project's), which pytest cannot run
    ran = {t.split("::")[0] for t in base.outcomes}
    reached = [t for t in radius.tests if t in ran and t not in new_tests]
    tests = [t for t in reached if (c.tree / t).is_file()][:50]
    if not tests:
        return []
    chosen = set(tests)
    focused = sum(s for t, s in base.durations.items() if t.split("::")[0] in chosen)
    # Measured time, not file count: skip the pass when it is most of the suite anyway.
    return tests if focused < total * 0.5 else []


def focused_verdict(
    baseline: Observed,
    report: TestReport | None,
    result: CommandResult,
    flaky: set[str] | None = None,
) -> Verdict:
    verdict = gates.run_gate(result, report)
    if not verdict.ok or report is None or baseline.tests is None:
        return verdict
    return gates.regression_gate(
        baseline.tests, report, baseline.flaky | (flaky or set()), result.output, partial=True
    )


def summary_text(
    report: TestReport | None, result: CommandResult, verdict: Verdict | None = None
) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in (report.summary() if report else {}).items())
    text = counts or f"exit {result.exit_code}"
    if report is not None and report.failing:  # name them: the user looks here first
        text += ": " + named(sorted(report.failing))
    if verdict is not None and verdict.ok and verdict.reason != PASS.reason:
        text += f"; {verdict.reason}"
    return text
