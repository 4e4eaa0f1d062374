"""The judge's stages, cheapest first, composed in one visible list: ``PIPELINE``.

Each stage is a plain function ``(Candidate, Judge) -> Verdict``. ``Candidate`` is the
explicit record of one round's change (its commit, made before any check ran, is what
lands); ``Judge`` holds what the stages may use and is never changed by them. The first
failing verdict ends the pipeline and becomes the model's feedback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from selfforge import git
from selfforge.config import Directives
from selfforge.context import blast_radius
from selfforge.judge import gates, integrity, syntax, tree_safety
from selfforge.judge.lint import parse_lint
from selfforge.judge.record import Recorder, first_line, named
from selfforge.judge.results import TestReport
from selfforge.judge.runner import CheckSpace, CommandResult, is_pytest, run_command, run_tests
from selfforge.judge.selfcheck import smoke_run
from selfforge.judge.verdict import PASS, Criterion, Observed, Verdict
from selfforge.roles import Caller, has_concerns, parse_vote, render
from selfforge.testpaths import TestRule
from selfforge.treefiles import remove_special_files

MAX_RERUN_TESTS = 50


@dataclass
class Candidate:
    """One round's change under judgement."""

    attempt_id: int
    round: int
    task: str
    base: str
    commit: str  # parent = base; holds exactly the applied edits; this is what lands
    tree: Path  # the worktree, restored to ``commit`` before and after each command
    changed: dict[str, str]  # path → git status letter
    diff: str
    criterion: Criterion
    critique: bool = True  # the critic may still speak (once per attempt)
    observed: Observed = field(default_factory=Observed)
    findings: list[str] = field(default_factory=list)
    concerns: str = ""


@dataclass(frozen=True)
class Judge:
    """What the stages may use. Built once per run by the trusted, running selfforge."""

    directives: Directives
    protected: tuple[str, ...]
    baseline: Observed
    space: CheckSpace
    rule: TestRule
    caller: Caller
    record: Recorder
    state_dir: Path
    self_target: bool = False


Stage = Callable[[Candidate, Judge], Verdict]


def run_pipeline(c: Candidate, j: Judge) -> Verdict:
    for stage in PIPELINE:
        verdict = stage(c, j)
        if not verdict.ok:
            return verdict
    return PASS


def check_syntax(c: Candidate, j: Judge) -> Verdict:
    if not j.directives.checks.syntax:
        return PASS
    started = time.monotonic()
    problems = syntax.check_syntax(c.tree, c.changed, before=syntax.at_commit(c.tree, c.base))
    text = "\n".join(map(str, problems))
    j.record.check(c, "syntax", None, 0 if not problems else 1, not problems, started, text)
    if not problems:
        return PASS
    first = problems[0]
    return Verdict(
        False,
        f"syntax error: {first.path}:{first.line}: {first.message}",
        f"Your edit broke the syntax:\n{text}",
    )


def check_protected(c: Candidate, j: Judge) -> Verdict:
    # The directives first: their reason names the keys (selfforge.toml is a protected
    # path too); then the protected globs; then symlinks out and nested repositories.
    verdict = tree_safety.directives_gate(c.tree, c.base, c.commit, c.changed)
    if verdict.ok:
        verdict = integrity.protected_gate(c.changed, list(j.protected))
    if verdict.ok:
        verdict = tree_safety.links_gate(c.tree, c.base, c.commit)
    return _shown(j, "integrity", verdict)


def check_tests_integrity(c: Candidate, j: Judge) -> Verdict:
    allow = j.directives.safety.allow_test_edits
    verdict = integrity.tests_integrity_gate(c.changed, c.diff, j.rule, allow_test_edits=allow)
    if verdict.ok and not allow:
        verdict = integrity.test_config_gate(c.tree, c.base, c.changed)
    return _shown(j, "integrity", verdict)


def check_reporting(c: Candidate, j: Judge) -> Verdict:
    verdict = integrity.reporting_gate(c.changed, c.diff, j.rule)
    verdict = (
        verdict if not verdict.ok else integrity.collection_gate(c.tree, c.changed, c.diff, j.rule)
    )
    return _shown(j, "integrity", verdict)


def check_lint(c: Candidate, j: Judge) -> Verdict:
    command = j.directives.checks.lint
    if not command:
        return PASS
    result = _run(c, j, "lint", command)
    findings = parse_lint(result.full_output, result.exit_code)
    # What the candidate shows becomes the next baseline if it lands: keep the lint.
    c.observed.lint, c.observed.lint_result = findings, result
    verdict = gates.lint_gate(j.baseline, c.observed)
    if verdict.ok and result.limit:
        verdict = Verdict(False, f"the lint run hit the {result.limit} limit", result.output)
    j.record.check(
        c,
        "lint",
        command,
        result.exit_code,
        verdict.ok,
        result,
        result.output,
        {"findings": len(findings)},
        names=[] if verdict.ok else list(verdict.details or []),
    )
    c.findings = [str(f) for f in findings if f.path in c.changed]
    return verdict


def critique(c: Candidate, j: Judge) -> Verdict:
    if not j.directives.role_enabled("critique") or not c.critique:
        return PASS
    j.record.begin("critique")
    started = time.monotonic()
    facts = [*c.findings, *syntax.complexity_findings(c.tree, c.changed)]
    prompt = render(
        "critique", task=c.task, goals=j.directives.goals.items, diff=c.diff, findings=facts
    )
    reply = j.caller.ask("critique", prompt, attempt_id=c.attempt_id)
    concerns = has_concerns(reply.content)
    j.record.step("critique", not concerns, first_line(reply.content), started)
    if not concerns or c.round >= j.directives.limits.max_repairs:
        c.concerns = reply.content if concerns else ""
        return PASS
    return Verdict(
        False,
        "critic: " + first_line(reply.content),
        f"A critic raised concerns about your change:\n{reply.content}",
    )


def check_tests(c: Candidate, j: Judge) -> Verdict:
    command = j.directives.checks.test
    if not command:
        return PASS
    # New test files are judged apart: in the judging run they could patch the code
    # under test (or pytest itself) from inside the process.
    pytest = is_pytest(command)
    new_tests = integrity.added_test_files(c.changed, j.rule) if pytest else []
    focused = _focused_tests(c, j, new_tests) if pytest else []
    if focused:
        result, report = _run_tests(c, j, "tests:affected", command, only=focused)
        verdict = _focused_verdict(j.baseline, report, result)
        j.record.step("tests:affected", verdict.ok, _summary(report, result), result=result)
        if not verdict.ok:
            return verdict
    result, report = _run_tests(c, j, "tests", command, ignore=new_tests)
    c.observed.tests, c.observed.tests_result = report, result
    if pytest and report is not None and gates.run_gate(result, report).ok:
        _mark_flaky(c, j, command)
    verdict = gates.tests_gate(j.baseline, c.observed, c.criterion)
    j.record.step("tests", verdict.ok, _summary(report, result, verdict), result=result)
    if verdict.ok and new_tests:
        result, report = _run_tests(c, j, "tests:new", command, only=new_tests)
        verdict = gates.new_tests_gate(j.baseline, report, result)
        j.record.step("tests:new", verdict.ok, _summary(report, result), result=result)
    if not verdict.ok:
        return verdict
    progress = gates.progress_gate(j.baseline, c.observed, c.criterion)
    j.record.step("progress", progress.ok, progress.reason or c.criterion.describe())
    return progress


def review(c: Candidate, j: Judge) -> Verdict:
    d = j.directives
    if not d.role_enabled("review"):
        return PASS
    reviewers = d.roles.reviewers or ["correctness"]
    quorum = min(d.roles.quorum, len(reviewers))
    approvals, reasons = 0, []
    for focus in reviewers:
        j.record.begin(f"review:{focus}")
        started = time.monotonic()
        prompt = render(
            "review",
            focus=focus,
            task=c.task,
            diff=c.diff,
            checks=_observed_text(c),
            concerns=c.concerns,
        )
        reply = j.caller.ask("review", prompt, attempt_id=c.attempt_id, hints={"focus": focus})
        vote = parse_vote(reply.content)
        j.record.step(f"review:{focus}", vote.approve, vote.reason, started)
        approvals += vote.approve
        if not vote.approve:
            reasons.append(f"{focus} reviewer: {vote.reason}")
    if approvals >= quorum:
        return Verdict(True, f"reviewers approved ({approvals}/{len(reviewers)})")
    reason = f"review: {approvals}/{len(reviewers)} approved (quorum {quorum}); " + "; ".join(
        reasons
    )
    return Verdict(False, reason, "Reviewers rejected your change:\n" + "\n".join(reasons))


def smoke(c: Candidate, j: Judge) -> Verdict:
    """A change to selfforge itself must still work, and still refuse known-bad changes."""
    if not j.self_target:
        return PASS
    j.record.begin("smoke run")
    started = time.monotonic()
    verdict = smoke_run(c.tree, j.state_dir, j.space)
    output = verdict.reason + ("\n" + verdict.feedback if verdict.feedback else "")
    j.record.check(c, "smoke", None, 0 if verdict.ok else 1, verdict.ok, started, output)
    return verdict


PIPELINE: tuple[Stage, ...] = (
    check_syntax,
    check_protected,
    check_tests_integrity,
    check_reporting,
    check_lint,
    critique,
    check_tests,
    review,
    smoke,
)


# --- helpers --------------------------------------------------------------------------------


def restore(tree: Path, commit: str) -> None:
    """Put the tree back to exactly ``commit``: tracked files rewritten (a symlink or FIFO
    a check put in a file's place is replaced, never written through), every untracked and
    ignored file removed. Nothing selfforge needs lives in a worktree (its git dir is a
    ``.git`` file pointing into the repository's own, which clean leaves alone)."""
    git.git("read-tree", "-u", "--reset", commit, cwd=tree)
    git.git("clean", "-q", "-ffdx", cwd=tree)
    remove_special_files(tree)


def _shown(j: Judge, name: str, verdict: Verdict) -> Verdict:
    if not verdict.ok:
        j.record.step(name, False, verdict.reason)
    return verdict


def _run(c: Candidate, j: Judge, name: str, command: str) -> CommandResult:
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


def _run_tests(
    c: Candidate,
    j: Judge,
    name: str,
    command: str,
    only: list[str] | None = None,
    ignore: list[str] | None = None,
    commit: str | None = None,
) -> tuple[CommandResult, TestReport | None]:
    """Run and journal a test command on the candidate's tree at ``commit`` (the
    candidate's own unless told); the caller reports the step once it is judged."""
    j.record.begin(name)
    tree, commit = c.tree, commit or c.commit
    restore(tree, commit)
    try:
        result, report = run_tests(
            command,
            tree,
            j.directives.checks.timeout_s,
            j.space,
            on_start=j.record.on_start,
            only=only,
            ignore=ignore,
            head=commit,
        )
    finally:
        # What the tests left (a symlink to ~/.ssh in place of a source file, a FIFO)
        # never reaches a prompt, a stage or a later round: selfforge reads this tree.
        restore(tree, c.commit)
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
    )
    return result, report


def _focused_tests(c: Candidate, j: Judge, new_tests: list[str]) -> list[str]:
    """Tests near the change, worth a first pass only when much faster than the suite."""
    base = j.baseline.tests
    total = sum(base.durations.values()) if base is not None else 0.0
    if base is None or total <= 2.0:  # a suite this quick gains nothing from a first pass
        return []
    radius = blast_radius(c.tree, list(c.changed), state_dir=j.state_dir)
    tests = [t for t in radius.tests if (c.tree / t).is_file() and t not in new_tests][:50]
    if not tests:
        return []
    chosen = set(tests)
    focused = sum(s for t, s in base.durations.items() if t.split("::")[0] in chosen)
    # Measured time, not file count: skip the pass when it is most of the suite anyway.
    return tests if focused < total * 0.5 else []


def _focused_verdict(
    baseline: Observed, report: TestReport | None, result: CommandResult
) -> Verdict:
    verdict = gates.run_gate(result, report)
    if not verdict.ok or report is None or baseline.tests is None:
        return verdict
    return gates.regression_gate(
        baseline.tests, report, baseline.flaky, result.output, partial=True
    )


def _mark_flaky(c: Candidate, j: Judge, command: str) -> None:
    """Rerun the tests whose outcome changed, on both trees; what varies is flaky."""
    base, cand = j.baseline.tests, c.observed.tests
    reruns = j.directives.checks.reruns
    if base is None or cand is None or reruns <= 0:
        return
    changed = sorted(
        t
        for t in set(base.outcomes) | set(cand.outcomes)
        if (base.outcomes.get(t) == "passed") != (cand.outcomes.get(t) == "passed")
        and "<collection>" not in t
        and t in cand.outcomes
        and t in base.outcomes
    )[:MAX_RERUN_TESTS]
    if not changed:
        return
    flaky: set[str] = set()
    # Both on the candidate's own tree, restored to each commit in turn (no second
    # checkout), the candidate first: a test that flips on every run shows as flaky.
    for commit, first in ((c.commit, cand), (c.base, base)):
        for _ in range(reruns):
            _, again = _run_tests(c, j, "tests:rerun", command, only=changed, commit=commit)
            outcomes = again.outcomes if again else {}
            flaky |= {t for t in changed if outcomes.get(t) != first.outcomes.get(t)}
    restore(c.tree, c.commit)
    c.observed.flaky = flaky
    if flaky:
        j.record.flaky(c, sorted(flaky))


def _summary(
    report: TestReport | None, result: CommandResult, verdict: Verdict | None = None
) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in (report.summary() if report else {}).items())
    text = counts or f"exit {result.exit_code}"
    if report is not None and report.failing:  # name them: the user looks here first
        text += ": " + named(sorted(report.failing))
    if verdict is not None and verdict.ok and verdict.reason != PASS.reason:
        text += f"; {verdict.reason}"
    return text


def _observed_text(c: Candidate) -> str:
    obs = c.observed
    lines = [f"Acceptance criterion: {c.criterion.describe()}."]
    if obs.tests_result is None:
        lines.append("syntax and lint passed; no test command is configured")
    else:
        counts = ", ".join(
            f"{v} {k}" for k, v in (obs.tests.summary() if obs.tests else {}).items()
        )
        lines.append(f"tests: exit {obs.tests_result.exit_code}; {counts}; no regression")
    if c.criterion.kind == "change":
        lines.append("Approve only if the change actually does the task.")
    return "\n".join(lines)
