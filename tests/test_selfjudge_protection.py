"""A weakened judge cannot land itself (#21.9): on selfforge's own repository, every file
that feeds the judge or acts on its verdict is protected, so a candidate that weakens one
is refused before any of its code runs. Checked against the repository's real
directives, for the four weakenings a red team landed before."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.config import load_directives
from selfforge.judge.rules.integrity import protected_gate

ROOT = Path(__file__).parents[1]
WEAKENINGS = {
    "src/selfforge/config.py": "the protected globs dropped",
    "src/selfforge/run/attempt.py": "test files left out of the change list or the diff",
    "src/selfforge/run/engine.py": "the sandbox turned off without a word",
    "src/selfforge/run/parallel.py": "a failed candidate ranked and landed",
    "src/selfforge/run/loop.py": "the baseline measured on something else",
    "src/selfforge/repo/workspace.py": "landing without its checks",
    "src/selfforge/judge/gates.py": "a gate that passes everything",
    "src/selfforge/repo/protected.py": "the protected globs matching nothing",
    "src/selfforge/run/undo.py": "rollback to a tree the last known good does not hold",
    "src/selfforge/run/recovery.py": "a stranger's process group killed by recovery",
    "src/selfforge/run/baselines.py": "a baseline measured on the candidate, kept stale, "
    "or a check's early run of the candidate taken as is",
}


# Code guarded only by tests that cannot run inside the judge's sandbox (found by running
# selfforge's fast tier inside one: they fail or skip there, so on a self-run they sit in
# the baseline as failing and would not catch a regression): a person changes it.
GUARDED_ONLY_OUTSIDE_THE_SANDBOX = {
    "src/selfforge/bench/executors.py": "test_one_spawner: the bench grades in the sandbox",
    "src/selfforge/cli/doctor.py": "test_sandbox_root, test_doctor_truth: the probe fails inside",
    "src/selfforge/cli/launch.py": "test_resident_reach: the folder every sandbox hides",
    "src/selfforge/cli/resident.py": "test_resident_reach: skipped without a working sandbox",
    "src/selfforge/run/clean.py": "test_clean: a killed run's control groups",
}
REFUSED = {**WEAKENINGS, **GUARDED_ONLY_OUTSIDE_THE_SANDBOX}


@pytest.mark.parametrize("path", sorted(REFUSED))
def test_a_change_to_what_feeds_the_judge_is_refused(path: str) -> None:
    """What feeds the judge, and what only tests outside its sandbox guard."""
    why = REFUSED[path]
    protected = load_directives(ROOT).protected
    verdict = protected_gate({path: "M"}, protected)
    assert not verdict.ok, f"{path} ({why}) is not protected"
    assert path in verdict.reason


def test_control_an_ordinary_module_is_not_protected() -> None:
    protected = load_directives(ROOT).protected
    assert protected_gate({"src/selfforge/journal/report.py": "M"}, protected).ok
