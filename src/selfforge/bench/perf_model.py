"""A model's change on a perf instance (``bench run --instances perf.jsonl --model SPEC``):
GSO's question — does the model make the code as much faster as the expert did?

In a clone at the instance's parent, with the directives the instance was mined with
committed there, ``selfforge run --task TEXT --measure M …`` makes one attempt with the
model: its change lands only if every gate holds and each goal measure is ``improved``
(the measured goal's rule, as for a user). A landed change is then compared with where it
started (``selfforge measure --json``) and its gain divided by the expert's (the figures
the instance was mined with): the instance counts toward the rate when that ratio reaches
``REACH`` on every goal measure (GSO's Opt@1 threshold).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.bench.perf import PerfInstance
from selfforge.repo.git import git

REACH = 0.95  # the share of the expert's gain a model's change must reach, per measure
IDENTITY = ["-c", "user.name=selfforge bench", "-c", "user.email=bench@localhost"]


@dataclass
class ModelRun:
    """What the model's attempt came to."""

    outcome: str  # the attempt's outcome (accepted, rejected, no_edits, …) or "error"
    lands: bool = False
    reason: str = ""
    figures: list[dict[str, object]] = field(default_factory=list)  # measure --json's
    measures: dict[str, str] = field(default_factory=dict)  # measure -> verdict word
    reaches: float = 0.0  # its gain over the expert's, the smallest over the goal measures


def run_selfforge(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """A ``selfforge`` command as a user starts it, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "selfforge", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def task_text(inst: PerfInstance) -> str:
    """The task the model is given: the goal and the expert's subject line, as GSO names
    what to speed up, never the expert's change."""
    subject = inst.message.splitlines()[0] if inst.message else ""
    return (
        f"Make the code faster, as measured by {', '.join(inst.measures)}, without "
        f"changing what it does (the maintainers' commit was: {subject!r})"
    )


def model_run(inst: PerfInstance, place: Path, spec: str, timeout_s: float) -> ModelRun:
    """One attempt of the model at ``inst`` in a clone under ``place``."""
    work = place / "model"
    git("clone", "-q", "--shared", inst.repo, str(work), cwd=place)
    git("checkout", "-q", "-B", "bench-model", inst.parent, cwd=work)
    (work / "selfforge.toml").write_text(inst.directives, encoding="utf-8")
    git("add", "selfforge.toml", cwd=work)
    git(*IDENTITY, "commit", "-q", "--allow-empty", "-m", "the instance's directives", cwd=work)
    start = git("rev-parse", "HEAD", cwd=work).strip()
    goal = [a for m in inst.measures for a in ("--measure", m)]
    proc = run_selfforge(
        "run", "--repo", str(work), "--model", spec, "--task", task_text(inst), *goal,
        "--cycles", "1", "--land", "merge", timeout=timeout_s * 20,
    )  # fmt: skip
    logged = run_selfforge("log", "--json", "--repo", str(work), timeout=60)
    try:
        attempts = json.loads(logged.stdout or "[]")
    except ValueError:
        attempts = []
    if not attempts:
        tail = proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["-"]
        return ModelRun("error", reason=f"exit {proc.returncode}: {tail[-1][:300]}")
    last = attempts[-1]
    run = ModelRun(str(last.get("outcome") or "error"), reason=str(last.get("reason") or ""))
    head = git("rev-parse", "HEAD", cwd=work).strip()
    if head == start:
        return run  # nothing landed: no gain
    run.lands = True
    measured = run_selfforge(
        "measure", f"{start}..{head}", "--json", "--repo", str(work), *goal,
        timeout=timeout_s * 10,
    )  # fmt: skip
    try:
        run.figures = list(json.loads(measured.stdout).get("measures") or [])
    except ValueError:
        run.reason += f"; measure gave no answer: {measured.stderr.strip()[-200:]}"
        return run
    run.measures = {str(f["name"]): str(f["verdict"]) for f in run.figures}
    run.reaches = reach(run.figures, inst)
    return run


def reach(figures: list[dict[str, object]], inst: PerfInstance) -> float:
    """The model's gain over the expert's: each goal measure's relative change divided by
    the one the instance was mined with (both toward better), the smallest of them; 0
    where the expert's is unknown or the model's is not a gain."""
    expert = {str(f.get("name")): f.get("change") for f in inst.figures}
    mine = {str(f.get("name")): f.get("change") for f in figures}
    ratios = []
    for name in inst.measures:
        theirs, ours = expert.get(name), mine.get(name)
        if not isinstance(theirs, int | float) or not isinstance(ours, int | float) or not theirs:
            return 0.0
        ratios.append(max(ours / theirs, 0.0))  # same sign: both faster (or both higher)
    return round(min(ratios), 3) if ratios else 0.0
