"""``bench run`` on perf instances (``bench mine --kind perf``): each performance commit
replayed as a measured goal, judged by ``selfforge check --json`` in a clone of the
repository (the directives the instance was mined with, untracked in it) and by the
measured goal's rule (run/attempt.py, measure/gate.judge_goal): a change lands only if
every test gate holds, each goal measure is ``improved`` and no other measure is ``worse``.

Per instance, the candidates, each a commit on the instance's parent:

- ``gold``: the expert's commit; it must measure ``improved`` (and would land);
- ``reverted``: the commit with its speed-up reverted (its code files back to the
  parent's) and its tests kept: refused (nothing is faster);
- ``noop``: a no-op reformat of a file the commit changes (a comment line): refused;
- ``broken``: the commit plus a planted bug (judge/mutants.py, through gate_cheats) that
  an existing test catches: faster, and wrong: refused by the tests;
- ``model`` (``--model SPEC``): the model's own attempt at the instance, from its parent
  (bench/perf_model.py): whether it landed, and its gain over the expert's (GSO's rate);

and ``noop_trials`` further comparisons of the no-op (``selfforge measure A..B``), each
a chance for noise to pass for a gain: how many came out ``improved``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from selfforge.bench import gate_cheats
from selfforge.bench.perf import PerfInstance
from selfforge.bench.perf_model import REACH, model_run, run_selfforge
from selfforge.bench.testrun import Suite, resolve_command, run_tests
from selfforge.config import parse_directives
from selfforge.errors import SelfforgeError
from selfforge.judge.outcome import Outcome
from selfforge.measure import stats
from selfforge.repo.git import git, ok

BENCH_IDENTITY = ["-c", "user.name=selfforge bench", "-c", "user.email=bench@localhost"]
NEGATIVES = ("reverted", "noop", "broken")
NOT_DRAWN = "not_drawn"  # a negative the instance has none of
COMMENT = {".py": "#", ".sh": "#", ".rb": "#", ".toml": "#", ".yaml": "#", ".yml": "#"}


class Candidate(BaseModel):
    """One candidate of an instance and what the gate made of it."""

    candidate: str  # gold, or one of NEGATIVES
    outcome: str  # check's verdict, "not_drawn" or "error"
    measures: dict[str, str] = Field(default_factory=dict)  # measure -> verdict word
    figures: list[dict[str, object]] = Field(default_factory=list)  # check --json's
    lands: bool = False  # the measured goal's rule
    drawn: str = ""  # what the negative changed
    reason: str = ""
    seconds: float = 0.0
    reaches: float | None = None  # model: its gain over the expert's (perf_model.reach)


class PerfResult(BaseModel):
    kind: str = "perf"
    instance_id: str
    measures: list[str]
    candidates: list[Candidate] = Field(default_factory=list)
    noop_trials: int = 0
    noop_improved: int = 0
    wall_s: float = 0.0
    error: str | None = None

    def row(self, name: str) -> Candidate | None:
        return next((c for c in self.candidates if c.candidate == name), None)


def replay_all(
    instances: list[PerfInstance],
    *,
    gold: bool,
    negatives: bool,
    noop_trials: int,
    timeout_s: float,
    work_dir: Path | None,
    keep: bool,
    on_done: Callable[[PerfResult], None] | None = None,
    model: str = "",
) -> list[PerfResult]:
    results = []
    for inst in instances:
        result = replay(inst, gold, negatives, noop_trials, timeout_s, work_dir, keep, model)
        results.append(result)
        if on_done is not None:
            on_done(result)
    return results


def replay(
    inst: PerfInstance,
    gold: bool,
    negatives: bool,
    noop_trials: int,
    timeout_s: float,
    work_dir: Path | None,
    keep: bool,
    model: str = "",
) -> PerfResult:
    """One instance's candidates judged; never raises for a harness failure."""
    started = time.monotonic()
    result = PerfResult(instance_id=inst.instance_id, measures=inst.measures)
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix=f"{inst.instance_id}-perf-", dir=work_dir))
    try:
        _Replay(inst, place, timeout_s).run(result, gold, negatives, noop_trials, model)
    except SelfforgeError as exc:
        result.error = exc.message
    except Exception as exc:  # the harness must report, not die, whatever one job hits
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if not keep:
            shutil.rmtree(place, ignore_errors=True)
    result.wall_s = round(time.monotonic() - started, 3)
    return result


class _Replay:
    def __init__(self, inst: PerfInstance, place: Path, timeout_s: float) -> None:
        self.inst, self.timeout_s = inst, timeout_s
        self.clone, self.build = place / "repo", place / "build"
        git("clone", "-q", "--shared", inst.repo, str(self.clone), cwd=place)
        (self.clone / "selfforge.toml").write_text(inst.directives, encoding="utf-8")
        git("clone", "-q", "--shared", str(self.clone), str(self.build), cwd=place)
        checks = parse_directives(inst.directives, self.clone / "selfforge.toml").checks
        self.suite = Suite(resolve_command(checks.test or "python -m pytest"), checks.runner)

    def run(
        self, result: PerfResult, gold: bool, negatives: bool, noop_trials: int, model: str
    ) -> None:
        inst = self.inst
        if gold:
            result.candidates.append(self.judge("gold", inst.commit))
        if model:
            started = time.monotonic()
            made = model_run(inst, self.clone.parent, model, self.timeout_s)
            result.candidates.append(
                Candidate(
                    candidate="model",
                    outcome=made.outcome,
                    measures=made.measures,
                    figures=made.figures,
                    lands=made.lands,
                    reason=made.reason[:500],
                    reaches=made.reaches,
                    seconds=round(time.monotonic() - started, 3),
                )
            )
        noop: str | None = None
        for kind in NEGATIVES if negatives or noop_trials else ():
            if kind != "noop" and not negatives:
                continue
            started = time.monotonic()
            try:
                sha, drawn = getattr(self, f"_{kind}")()
            except _NotDrawn as why:
                result.candidates.append(
                    Candidate(candidate=kind, outcome=NOT_DRAWN, reason=str(why))
                )
                continue
            noop = sha if kind == "noop" else noop
            if negatives:
                row = self.judge(kind, sha)
                row.drawn = drawn
                row.seconds = round(time.monotonic() - started, 3)
                result.candidates.append(row)
        if noop is not None:
            for _ in range(noop_trials):
                words = self.measure(noop)
                result.noop_trials += 1
                result.noop_improved += any(words.get(m) == stats.IMPROVED for m in inst.measures)

    # --- the candidates ------------------------------------------------------------------

    def _checkout(self, sha: str) -> None:
        git("checkout", "-q", "-f", "--detach", sha, cwd=self.build)
        git("clean", "-q", "-fdx", cwd=self.build)

    def _commit(self, message: str) -> str:
        """The build tree as it is, a commit on the instance's parent, pushed to the clone."""
        git("add", "-A", cwd=self.build)
        tree = git("write-tree", cwd=self.build).strip()
        sha = git(
            *BENCH_IDENTITY,
            "commit-tree",
            tree,
            "-p",
            self.inst.parent,
            "-m",
            message,
            cwd=self.build,
        ).strip()
        git(
            "push",
            "-q",
            str(self.clone),
            f"{sha}:refs/heads/bench-perf/{message.split()[0]}",
            cwd=self.build,
        )
        return sha

    def _reverted(self) -> tuple[str, str]:
        self._checkout(self.inst.commit)
        for path in self.inst.code_files:
            if ok("cat-file", "-e", f"{self.inst.parent}:{path}", cwd=self.build):
                git("checkout", "-q", self.inst.parent, "--", path, cwd=self.build)
            else:
                git("rm", "-q", "-f", "--", path, cwd=self.build)
        kept = (
            f"; its tests kept ({', '.join(self.inst.test_files[:3])})"
            if self.inst.test_files
            else ""
        )
        return self._commit(
            "reverted speed-up"
        ), f"code of {', '.join(self.inst.code_files[:3])} as the parent's{kept}"

    def _noop(self) -> tuple[str, str]:
        self._checkout(self.inst.parent)
        for path in self.inst.code_files:
            mark = COMMENT.get(PurePosixPath(path).suffix, "//")
            file = self.build / path
            if file.is_file():
                text = file.read_text(encoding="utf-8")
                file.write_text(text.rstrip("\n") + f"\n\n{mark} reformatted\n", encoding="utf-8")
                return self._commit("noop reformat"), f"{path}: a blank line and a comment"
        raise _NotDrawn("none of the commit's code files is in its parent")

    def _broken(self) -> tuple[str, str]:
        self._checkout(self.inst.commit)
        own = run_tests(self.build, self.suite, [], self.timeout_s)
        if not own.passed:
            raise _NotDrawn(f"the commit's own suite passes no test here (exit {own.exit_code})")

        def caught() -> set[str] | None:
            ran = run_tests(self.build, self.suite, [], self.timeout_s)
            return (own.passed - ran.passed) or None

        files = [f for f in self.inst.code_files if (self.build / f).is_file()]
        planted = gate_cheats.plant_bug(self.build, files, [], caught)
        if planted is None:
            raise _NotDrawn("no planted bug in the commit's code that a test catches")
        mutation, failing = planted
        drawn = f"{mutation.describe()}; caught by {', '.join(sorted(failing)[:2])}"
        return self._commit("broken speed-up"), drawn

    # --- judging -------------------------------------------------------------------------

    def judge(self, name: str, rev: str) -> Candidate:
        """``selfforge check --json REV`` in the clone, and the measured goal's rule."""
        started = time.monotonic()
        proc = run_selfforge(
            "check", "--json", "--repo", str(self.clone), rev, timeout=self.timeout_s * 10
        )
        row = Candidate(candidate=name, outcome=Outcome.ERROR)
        try:
            answer = json.loads(proc.stdout[proc.stdout.index("{") :])
        except ValueError:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            row.reason = f"exit {proc.returncode}: {tail[:300]}"
            return row
        row.outcome = str(answer.get("verdict") or Outcome.ERROR)
        row.reason = str(answer.get("reason") or answer.get("error") or "")[:500]
        row.figures = list(answer.get("measures") or [])
        row.measures = {str(m["name"]): str(m["verdict"]) for m in row.figures}
        goal = all(row.measures.get(m) == stats.IMPROVED for m in self.inst.measures)
        others = any(
            v == stats.WORSE for k, v in row.measures.items() if k not in self.inst.measures
        )
        row.lands = row.outcome == Outcome.ACCEPTED and goal and not others
        row.seconds = round(time.monotonic() - started, 3)
        return row

    def measure(self, rev: str) -> dict[str, str]:
        """``selfforge measure PARENT..REV --json`` in the clone: measure -> verdict."""
        args = [a for m in self.inst.measures for a in ("--measure", m)]
        proc = run_selfforge(
            "measure",
            f"{self.inst.parent}..{rev}",
            "--json",
            "--repo",
            str(self.clone),
            *args,
            timeout=self.timeout_s * 10,
        )
        try:
            answer = json.loads(proc.stdout)
        except ValueError:
            raise SelfforgeError(f"measure gave no answer: {proc.stderr.strip()[-300:]}") from None
        return {str(m["name"]): str(m["verdict"]) for m in answer.get("measures") or []}


class _NotDrawn(Exception):
    """A negative the instance has none of: why."""


# --- the report --------------------------------------------------------------------------


def summary(results: list[PerfResult]) -> list[str]:
    """The bench's figures: gold improved, negatives refused, no-op false improvements,
    wall time per instance."""
    golds = [r.row("gold") for r in results]
    golds_run = [g for g in golds if g is not None and g.outcome != Outcome.ERROR]
    improved = sum(
        all(g.measures.get(m) == stats.IMPROVED for m in r.measures)
        for r, g in zip(results, golds, strict=True)
        if g is not None and g.outcome != Outcome.ERROR
    )
    landed = sum(g.lands for g in golds_run)
    drawn = [
        c
        for r in results
        for c in r.candidates
        if c.candidate in NEGATIVES and c.outcome not in (NOT_DRAWN, Outcome.ERROR)
    ]
    refused = sum(not c.lands for c in drawn)
    not_drawn = sum(c.outcome == NOT_DRAWN for r in results for c in r.candidates)
    errors = sum(c.outcome == Outcome.ERROR for r in results for c in r.candidates) + sum(
        r.error is not None for r in results
    )
    trials = sum(r.noop_trials for r in results)
    false = sum(r.noop_improved for r in results)
    walls = [r.wall_s for r in results]
    lines = [f"instances: {len(results)}"]
    if golds_run:
        lines.append(
            f"gold measured improved: {improved}/{len(golds_run)} "
            f"({improved / len(golds_run):.0%}); would land: {landed}/{len(golds_run)}"
        )
    if drawn or not_drawn:
        lines.append(f"negatives refused: {refused}/{len(drawn)} (not drawn: {not_drawn})")
    if trials:
        lines.append(f"no-op trials: {false} false improvement(s) in {trials}")
    models = [c for r in results for c in r.candidates if c.candidate == "model"]
    if models:
        landed_m = sum(c.lands for c in models)
        reached = sum(c.lands and (c.reaches or 0.0) >= REACH for c in models)
        lines.append(
            f"model: landed {landed_m}/{len(models)}; reached {REACH:.0%} of the expert's "
            f"gain on {reached}/{len(models)} ({reached / len(models):.0%})"
        )
    if walls:
        lines.append(
            f"wall time per instance: {statistics.fmean(walls):.1f} s "
            f"(min {min(walls):.1f}, max {max(walls):.1f})"
        )
    if errors:
        lines.append(f"errors: {errors}")
    return lines


def write_report(results: list[PerfResult], folder: Path, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    head = (
        "| instance | measure | gold | "
        + " | ".join(NEGATIVES)
        + " | model | no-op trials improved | wall s |"
    )
    lines = [
        f"# perf bench: {source}",
        "",
        *[f"- {s}" for s in summary(results)],
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for r in results:
        cells = []
        for name in ("gold", *NEGATIVES, "model"):
            c = r.row(name)
            cells.append("—" if c is None else _cell(c, r.measures))
        trials = f"{r.noop_improved}/{r.noop_trials}" if r.noop_trials else "—"
        lines.append(
            f"| {r.instance_id} | {', '.join(r.measures)} | "
            + " | ".join(cells)
            + f" | {trials} | {r.wall_s:.1f} |"
        )
    errors = [r for r in results if r.error]
    if errors:
        lines += ["", "## Errors", *[f"- {r.instance_id}: {r.error}" for r in errors]]
    path = folder / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cell(c: Candidate, goal: list[str]) -> str:
    if c.outcome in (NOT_DRAWN, Outcome.ERROR):
        return c.outcome.replace("_", " ")
    words = ", ".join(c.measures.get(m, "not measured") for m in goal)
    said = "lands" if c.lands else "refused"
    reached = f"; {c.reaches:.0%} of the expert's gain" if c.reaches is not None else ""
    return f"{said} ({c.outcome}; {words}{reached})"


def append_result(path: Path, result: PerfResult) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(result.model_dump_json() + "\n")


def read_results(path: Path) -> list[PerfResult]:
    if not path.is_file():
        return []
    return [PerfResult.model_validate_json(x) for x in path.read_text().splitlines() if x.strip()]
