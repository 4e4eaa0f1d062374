"""One job in one fresh clone: tests first, then selfforge's normal loop, then the grade.

    clone at parent -> commit the instance's tests -> the bench runs the tests (they must
    reproduce) -> ``selfforge run`` with the task -> the bench runs them again -> Result

Runs inside an executor's worker (a pool process or a Ray task): everything it needs
travels in the Job, everything it reports is in the Result.
"""

from __future__ import annotations

import inspect
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selfforge.bench import negatives, refusals
from selfforge.bench.records import Instance, Job, Result
from selfforge.bench.testrun import as_recorded, check_command, run_tests
from selfforge.errors import GitError, SelfforgeError
from selfforge.propose import registry
from selfforge.repo import trees
from selfforge.repo.git import git
from selfforge.ui.reporters import BaseReporter

TESTS_FIRST = "bench: the tests the change must make pass (tests first)"
BENCH_IDENTITY = ["-c", "user.name=selfforge bench", "-c", "user.email=bench@localhost"]
# The task is the commit message as written: no planner rewrites it.
ROLES = ["propose", "critique", "review", "reflect"]


def run_job(job: Job) -> Result:
    """Never raises for a harness failure: the Result carries ``error`` instead."""
    started = time.monotonic()
    inst = job.instance
    result = Result(instance_id=inst.instance_id, mode=job.mode, model=job.model)
    result.kind, result.repeat = job.kind, job.repeat
    result.proposer, result.impossible = job.proposer, inst.impossible
    if job.mode == "negative":
        try:
            negatives.precheck(inst, job.kind or "bug")
        except negatives.NotDrawn as why:
            result.outcome, result.skipped = "not drawn", str(why)
            return result
    Path(job.work_dir).mkdir(parents=True, exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix=f"{inst.instance_id}-{job.mode}-", dir=job.work_dir))
    try:
        _replay(place, job, result)
    except SelfforgeError as exc:
        result.outcome, result.error = "error", exc.message
    except Exception as exc:  # the harness must report, not die, whatever one job hits
        result.outcome, result.error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        if not job.keep_clone:
            _remove_trees(place / "repo")
            shutil.rmtree(place, ignore_errors=True)
    result.wall_s = round(time.monotonic() - started, 3)
    return result


def _remove_trees(clone: Path) -> None:
    """The clone's worktrees and setup, kept outside it (selfforge.repo.trees): they go with it."""
    if (clone / ".git").is_dir():
        shutil.rmtree(trees.for_repo(clone, clone / ".git"), ignore_errors=True)


def _replay(place: Path, job: Job, result: Result) -> None:
    inst = job.instance
    clone = place / "repo"
    prepare_clone(inst, clone, job.timeout_s, (Path(job.work_dir).resolve(),))
    listed = set(inst.fail_to_pass) | set(inst.pass_to_pass)
    proposal = _draw(job, clone, result) if job.mode == "negative" else None
    if result.skipped is not None:
        return
    result.index_s = round(warm_index(clone), 3)
    before = run_tests(clone, inst.suite, inst.test_targets, job.timeout_s)
    result.baseline_tests_s = round(before.duration_s, 3)
    already = sorted(before.passes(inst.fail_to_pass))
    broken = sorted(set(inst.pass_to_pass) - before.passes(inst.pass_to_pass))
    if already or broken:
        result.outcome = "error"
        result.error = (
            f"the instance does not reproduce here: {len(already)} FAIL_TO_PASS test(s) pass "
            f"and {len(broken)} PASS_TO_PASS test(s) fail before any change "
            f"(e.g. {(already + broken)[0]}); mine it again in this environment"
        )
        return
    spec = model_spec(job, place, proposal)
    from selfforge.run.session import start_run

    timer = TestTimer()
    t0, cpu0 = time.monotonic(), time.process_time()
    summary = start_run(
        clone,
        goals=[inst.task],
        cycles=1,
        max_repairs=job.max_repairs,
        model=spec,
        land="merge",
        as_json=True,  # with a reporter of ours: prints nothing
        reporter=timer,
        **proposer_options(job.proposer, start_run),
    )
    result.selfforge_s = round(time.monotonic() - t0, 3)
    result.overhead_cpu_s = round(time.process_time() - cpu0, 3)
    ids = [int(a["id"]) for a in summary.get("attempts") or [] if a.get("id") is not None]
    runs, seconds = _test_runs(clone, ids)
    result.selfforge_test_runs = timer.runs + runs
    result.selfforge_tests_s = round(timer.seconds + seconds, 3)
    result.overhead_s = round(result.selfforge_s - result.selfforge_tests_s, 3)
    _read_summary(summary, clone, result)
    refusals.judge_honesty(clone, inst, ids, result)
    if not result.landed:
        result.fail_to_pass_failing = sorted(inst.fail_to_pass)
        if job.mode == "gold":
            classify(clone, inst, before.outcomes, result, job.timeout_s)
        return
    after = run_tests(clone, inst.suite, inst.test_targets, job.timeout_s)
    result.verify_tests_s = round(after.duration_s, 3)
    result.fail_to_pass_failing = sorted(set(inst.fail_to_pass) - after.passes(inst.fail_to_pass))
    result.pass_to_pass_failing = sorted(set(inst.pass_to_pass) - after.passes(inst.pass_to_pass))
    result.solved = after.holds(listed)


def proposer_options(proposer: str, start_run: Callable[..., Any]) -> dict[str, Any]:
    """``start_run``'s keywords for a job's proposer (a name of propose/registry.py):
    ``proposer=`` as ``run --proposer`` takes it, or for one with an argument, its name
    as the keyword: ``agent=NAME`` for ``agent:NAME``, as ``run --agent NAME`` does."""
    found = registry.parse(proposer)
    if found is None:
        raise SelfforgeError(f"--proposer {proposer}: use {registry.spellings()}")
    entry, argument = found
    if not entry.argument:
        return {"proposer": proposer}
    if entry.name not in inspect.signature(start_run).parameters:
        raise SelfforgeError(
            f"--proposer {proposer}: this selfforge has no run --{entry.name}; "
            f"use {registry.spellings(False)}"
        )
    return {entry.name: argument}


def classify(
    clone: Path, inst: Instance, base: dict[str, str], result: Result, timeout_s: float
) -> None:
    """Explain a rejected gold change with the bench's own runs of the listed tests,
    independent of the judge: the base once more, and the gold change twice.

    - flaky: a listed test's outcome differs between two runs of the same code;
    - environment: the gold change fails listed tests here every time (the base passes
      them, or they were F2P and still fail): its code does not work in this place;
    - gold: it passes every listed test, but leaves others failing every time (the
      commit itself shipped a failing test; mining lists only what passes with it);
    - selfforge: the gold change passes every listed test every time, and the base is as
      before: nothing but the judge refused it.
    The clone is left as it was (the gold change is applied and reverted)."""
    listed = sorted(set(inst.fail_to_pass) | set(inst.pass_to_pass))

    def run() -> dict[str, str]:  # listed tests under their recorded ids, the others as run
        outcomes = run_tests(clone, inst.suite, inst.test_targets, timeout_s).outcomes
        return {**outcomes, **as_recorded(outcomes, listed)}

    base = {**base, **as_recorded(base, listed)}
    again = run()
    git("apply", "--whitespace=nowarn", "-", cwd=clone, input_text=inst.code_patch)
    try:
        first = run()
        second = run()
    finally:
        git("apply", "-R", "--whitespace=nowarn", "-", cwd=clone, input_text=inst.code_patch)

    def changed(a: dict[str, str], b: dict[str, str]) -> list[str]:
        return [
            f"{t}: {a.get(t, 'not run')} then {b.get(t, 'not run')}"
            for t in listed
            if a.get(t, "not run") != b.get(t, "not run")
        ]

    flips = changed(base, again) + changed(first, second)
    failing = [t for t in listed if first.get(t) != "passed"]
    # Tests the commit itself leaves failing (mining lists only what passes with it):
    # the judge wants a module that now builds to pass as a whole.
    broken = sorted(
        t
        for t, o in first.items()
        if o in ("failed", "error") and second.get(t) == o and t not in listed
    )
    if flips:
        result.rejection = "flaky"
        result.evidence = f"outcomes changed between two runs of the same code: {_few(flips)}"
    elif failing:
        result.rejection = "environment"
        shown = _few([f"{t} ({first.get(t, 'not run')})" for t in failing])
        result.evidence = (
            f"the gold change fails {len(failing)} listed test(s) here in the bench's own "
            f"runs too, twice: {shown}"
        )
    elif broken:
        result.rejection = "gold"
        result.evidence = (
            f"the gold change passes all {len(listed)} listed tests but leaves "
            f"{len(broken)} other test(s) failing, twice: {_few(broken)}; the commit "
            "itself is broken here"
        )
    else:
        result.rejection = "selfforge"
        result.evidence = (
            f"the gold change passes all {len(listed)} listed tests twice in the bench's "
            "own runs and the base reran as before: the judge refused a good change"
        )


def _few(items: list[str], n: int = 3) -> str:
    return "; ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def _draw(job: Job, clone: Path, result: Result) -> str | None:
    """The negative of the job's kind drawn in the clone (the proposal), or None with
    ``result.skipped`` saying why the instance has none."""
    inst = job.instance
    listed = set(inst.fail_to_pass) | set(inst.pass_to_pass)

    def breaks_a_test() -> bool:
        return not run_tests(clone, inst.suite, inst.test_targets, job.timeout_s).holds(listed)

    try:
        negative = negatives.draw(job.kind or "bug", clone, inst, breaks_a_test)
    except negatives.NotDrawn as why:
        result.outcome, result.skipped = "not drawn", str(why)
        return None
    result.drawn = negative.note
    return negative.patch


class TestTimer(BaseReporter):
    """A silent Reporter that keeps the baseline test run's own duration (the process's
    lifetime, as the judge reports it); the candidate's runs are read from the journal
    (``_test_runs``). selfforge's own time is everything else, measured strictly: the
    worktrees, restoring trees, the results channel and journaling around each run count
    as selfforge's, not the tests'."""

    def __init__(self) -> None:
        self.runs, self.seconds = 0, 0.0

    def step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        if name == "baseline" and detail.startswith("tests"):
            self.runs += 1
            self.seconds += seconds


def _test_runs(clone: Path, attempt_ids: list[int]) -> tuple[int, float]:
    """The test-command runs the judge made on candidates (the run itself, flaky reruns,
    the affected and new tests), and their processes' time, from the journal."""
    from selfforge.journal.store import Journal

    runs, seconds = 0, 0.0
    with Journal(clone / ".selfforge" / "journal.db") as journal:
        for attempt_id in attempt_ids:
            for check in journal.checks(attempt_id):
                if check["command"] and str(check["name"]).startswith("tests"):
                    runs += 1
                    seconds += float(check["duration_s"] or 0.0)
    return runs, seconds


def prepare_clone(
    inst: Instance, clone: Path, timeout_s: float, hidden: tuple[Path, ...] = ()
) -> None:
    """A clone at the parent with the instance's tests (and the bench's directives)
    committed, holding no commit after the parent (see ``clone_at``); its checks never
    see the source repository (when it is a folder here) nor ``hidden``."""
    clone_at(inst.repo, inst.parent, clone)
    source = Path(inst.repo)
    hidden = (*([source.resolve()] if source.is_dir() else []), *hidden)
    if inst.test_patch.strip():
        git("apply", "--index", "--whitespace=nowarn", "-", cwd=clone, input_text=inst.test_patch)
    (clone / "selfforge.toml").write_text(directives(inst, timeout_s, hidden), encoding="utf-8")
    git("add", "selfforge.toml", cwd=clone)
    # The message names no commit of the future: the history is context the model sees.
    git(*BENCH_IDENTITY, "commit", "-q", "--no-verify", "-m", TESTS_FIRST, cwd=clone)


def clone_at(repo: str, base: str, clone: Path) -> None:
    """A repository with the history up to ``base`` and nothing after it: no later
    commit, tree or blob, no remote, and only the tags of commits in that history.

    The model's context (retrieval, the history signal) and the checks' git (check_git
    shares these objects and tags) read this repository: a clone of everything would let
    a candidate's test run ``git log --all`` or ``git show <gold>`` and read the fix.
    Fetching the one commit packs just its history (``--shared`` would borrow the
    source's every object through alternates)."""
    clone.mkdir(parents=True)
    git("init", "-q", cwd=clone)
    try:
        git("fetch", "-q", "--no-tags", repo, f"{base}:refs/heads/bench", cwd=clone)
    except GitError as exc:
        raise SelfforgeError(
            f"cannot fetch commit {base[:12]} alone from {repo} ({exc.message.splitlines()[0]}); "
            "clone the repository here and pass its path with --repo"
        ) from None
    # Named in full: a project with a bench/ folder makes the bare name ambiguous.
    git("checkout", "-q", "bench", "--", cwd=clone)
    past = set(git("rev-list", "refs/heads/bench", "--", cwd=clone).split())
    tags: dict[str, str] = {}
    for line in git("ls-remote", "--tags", repo, cwd=clone).splitlines():
        sha, _, ref = line.partition("\t")
        tags[ref.removesuffix("^{}")] = sha  # a peeled line (the commit) comes last
    updates = "".join(f"create {ref} {sha}\n" for ref, sha in tags.items() if sha in past)
    if updates:  # lightweight, on the commit: enough for `git describe --tags`
        git("update-ref", "--stdin", cwd=clone, input_text=updates)


def warm_index(clone: Path) -> float:
    """Build the codebase index a user's repository keeps between runs; its time.

    A fresh clone has none, and building it is a one-time cost, not part of an attempt:
    reported apart (``index_s``) from selfforge's per-instance overhead.
    """
    from selfforge.context.index import open_index
    from selfforge.repo.workspace import Workspace

    started = time.monotonic()
    ws = Workspace(clone)
    ws.prepare()
    index = open_index(ws.state)
    try:
        index.update(ws.root)
    finally:
        index.close()
    return time.monotonic() - started


def directives(inst: Instance, timeout_s: float, hidden: tuple[Path, ...] = ()) -> str:
    """selfforge.toml for the replay: the instance's test modules are the test check;
    the folders that hold the future (the source repository, the other jobs' clones) are
    hidden from every check, even where a toolchain under them is shown."""
    test = check_command(inst.test_cmd, inst.test_targets, inst.runner)
    checks = [f"runner = {json.dumps(inst.runner)}"]
    checks += [f"junit = {json.dumps(inst.junit)}"] if inst.junit else []
    checks += [f"setup = {json.dumps(inst.setup)}"] if inst.setup else []
    return "\n".join(
        [
            "[goals]",
            f"items = [{json.dumps(inst.task)}]",
            "[checks]",
            f"test = {json.dumps(test)}",
            *checks,
            f"timeout_s = {float(timeout_s)}",
            "[roles]",
            f"enabled = {json.dumps(ROLES)}",
            "[land]",
            'mode = "merge"',
            "[sandbox]",
            f"hidden = {json.dumps([str(p) for p in hidden])}",
            "",
        ]
    )


def model_spec(job: Job, place: Path, negative: str | None = None) -> str:
    """Gold and negative jobs propose the instance's own change (or the negative drawn
    from it) through the scripted model."""
    if job.mode == "model":
        return job.model
    patch = job.instance.code_patch if job.mode == "gold" else negative
    if not patch:
        raise SelfforgeError(f"{job.instance.instance_id} has no {job.mode} patch")
    script = place / "script.json"
    script.write_text(json.dumps({"propose": [patch]}), encoding="utf-8")
    return f"script:{script}"


def _read_summary(summary: dict[str, Any], clone: Path, result: Result) -> None:
    from selfforge.journal.store import Journal

    attempts = summary.get("attempts") or []
    result.attempts = len(attempts)
    result.repairs = sum(int(a.get("repairs") or 0) for a in attempts)
    result.landed = any(a.get("landed") for a in attempts)
    result.outcome = attempts[-1]["outcome"] if attempts else "none"
    result.reasons = [str(a.get("reason") or "") for a in attempts]
    if not attempts and summary.get("stop_reason"):
        result.reasons = [str(summary["stop_reason"])]
    with Journal(clone / ".selfforge" / "journal.db") as journal:
        totals = journal.totals()
    result.tokens = totals.input_tokens + totals.output_tokens
    result.cost_usd = round(totals.cost_usd, 6)
