"""The baseline a candidate is judged against: measured on the unmodified commit in a
worktree of its own (or read from the cache when nothing that decides it changed), and
kept for the next run when a landed change's own checks saw the whole new tree. The run
loop and the gate for other agents (gate.py) both start here."""

from __future__ import annotations

import time

from rich.markup import escape

from selfforge import git
from selfforge.attempt import Engine
from selfforge.judge import baseline as judge_baseline
from selfforge.judge import baseline_cache, runners
from selfforge.judge.verdict import Observed


def measure_baseline(engine: Engine, commit: str) -> Observed:
    """Run lint and tests on the unmodified commit, in a worktree of its own; stop when
    the tests cannot judge (judge/baseline.py says why)."""
    d, ws = engine.d, engine.ws
    adapter = runners.detect(d.checks.test or "", ws.root, d.checks.runner, d.checks.junit or "")
    if adapter is not None and adapter.trust_note:  # said on every run, cached or not
        engine.reporter.info(f"  [yellow]note[/]: {escape(adapter.trust_note)}")
    digest = baseline_cache.key(ws.root, commit, d.checks, d.sandbox, engine.space)
    if (cached := baseline_cache.load(ws.state, digest)) is not None:
        observed, at = cached
        ago = time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
        engine.reporter.begin("baseline")
        engine.reporter.step(
            "baseline",
            None,
            f"cached: {baseline_cache.describe(observed)} (measured {ago} on this tree)",
        )
        return observed
    path = ws.create_worktree("baseline", commit)
    engine.reporter.begin("baseline")
    observed, warning = judge_baseline.measure(
        d.checks.lint,
        d.checks.test,
        path,
        commit,
        d.checks.timeout_s,
        engine.space,
        on_start=ws.note_child_group,
        say=lambda text, secs: engine.reporter.step("baseline", None, text, secs),
        required=d.checks.tests != "none",
    )
    if warning:
        engine.reporter.info(f"  [yellow]warning[/]: {escape(warning)}")
    else:  # a warning is shown on every run: measure again rather than keep it quiet
        baseline_cache.save(ws.state, digest, observed)
    return observed


def keep_baseline(engine: Engine, base: str, commit: str, observed: Observed) -> None:
    """A landed change's own checks are the next run's baseline when they saw the whole
    new tree: no new test file (the judging run leaves those out)."""
    added = git.git("diff", "--name-only", "--diff-filter=A", base, commit, cwd=engine.ws.root)
    if any(engine.rule.is_test_path(p) for p in added.split()):
        return
    d = engine.d
    digest = baseline_cache.key(engine.ws.root, commit, d.checks, d.sandbox, engine.space)
    baseline_cache.save(engine.ws.state, digest, observed)
