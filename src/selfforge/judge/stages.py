"""The judge's stages, cheapest first, composed in one visible list: ``PIPELINE``.

Each stage is a plain function ``(Candidate, Judge) -> Verdict``. ``Candidate`` is the
explicit record of one round's change (its commit, made before any check ran, is what
lands); ``Judge`` holds what the stages may use and is never changed by them. A stage
returns what it found (review items, lint findings, what it measured, runs made ahead) in
its verdict; no stage writes to the candidate: ``run_pipeline`` folds them into it for
the stages after, and into the ``Judgement``. The
first failing verdict ends the pipeline and becomes the model's feedback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from selfforge.judge import (
    behaviour_change,
    broken_base,
    contract,
    coverage,
    gates,
    lint_beside_tests,
    missing_deps,
    module_suites,
)
from selfforge.judge import criterion as criteria
from selfforge.judge.candidate import Candidate, Judge
from selfforge.judge.decision import decide
from selfforge.judge.flaky import mark_flaky, own_suite_flaky
from selfforge.judge.new_tests import check_new_tests
from selfforge.judge.rules import integrity, integrity_lang, syntax, tree_safety
from selfforge.judge.rules.lint import parse_lint
from selfforge.judge.runners import registry
from selfforge.judge.runners.results import TestReport
from selfforge.judge.selfcheck import smoke_run
from selfforge.judge.stage_log import first_line
from selfforge.judge.suite_runs import (
    focused_tests,
    focused_verdict,
    ran_ahead,
    run_test_command,
    shown,
    summary_text,
)
from selfforge.judge.verdict import PASS, Judgement, Observed, Verdict
from selfforge.roles.caller import has_concerns, parse_vote, render

Stage = Callable[[Candidate, Judge], Verdict]


def run_pipeline(c: Candidate, j: Judge, stages: tuple[Stage, ...] | None = None) -> Judgement:
    """Run ``stages`` (``PIPELINE``) in order until one refuses; fold what each found
    (review items, lint findings, what it measured, runs made ahead) into ``c`` for the
    stages after it; decide."""
    first = len(j.record.checks)
    verdict = PASS
    for stage in PIPELINE if stages is None else stages:
        verdict = stage(c, j)
        c.review.extend(verdict.review)
        c.findings.extend(verdict.findings)
        if verdict.observed is not None:
            c.observed.take(verdict.observed)
        c.ahead.update(verdict.ahead)
        if not verdict.ok:
            break
    return decide(c, j, verdict, j.record.checks[first:])


def for_person(j: Judge, verdict: Verdict) -> Verdict:
    """A refusal of what needs a person: listed for review in a person's check (it is
    not a rejection of a teammate's commit), refused for a model's proposal."""
    if verdict.ok or not j.person:
        return shown(j, "integrity", verdict)
    item = verdict.reason.removeprefix("integrity: ")
    j.record.step("integrity", True, "needs review: " + item)
    return Verdict(True, PASS.reason, review=[item])


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
    # The first two need a person in a person's change; the last never lands.
    verdict = for_person(j, tree_safety.directives_gate(c.tree, c.base, c.commit, c.changed))
    if verdict.ok:
        protected = for_person(j, integrity.protected_gate(c.changed, list(j.protected)))
        verdict = protected.noting(verdict.review)
    if verdict.ok:
        links = shown(j, "integrity", tree_safety.links_gate(c.tree, c.base, c.commit))
        verdict = links.noting(verdict.review)
    return verdict


def check_tests_integrity(c: Candidate, j: Judge) -> Verdict:
    deps = j.directives.safety.allow_dependency_changes
    verdict = integrity_lang.dependency_gate(c.tree, c.base, c.changed, allow_deps=deps)
    verdict = for_person(j, verdict)
    if not verdict.ok or j.person:
        # A person's tests and test infrastructure are judged by the contract itself: the
        # judging run takes the base's versions (judge/contract.py).
        return verdict
    verdict = integrity.tests_integrity_gate(c.changed, c.diff, j.rule)
    if verdict.ok:
        verdict = integrity.test_config_gate(c.tree, c.base, c.changed)
    if verdict.ok:
        verdict = integrity_lang.language_gate(c.tree, c.base, c.changed, c.diff)
    return shown(j, "integrity", verdict)


def check_reporting(c: Candidate, j: Judge) -> Verdict:
    verdict = integrity.reporting_gate(c.changed, c.diff, j.rule, person=j.person)
    if verdict.ok:
        verdict = integrity.collection_gate(c.tree, c.changed, c.diff, j.rule, person=j.person)
    return shown(j, "integrity", verdict)


def check_lint(c: Candidate, j: Judge) -> Verdict:
    command = j.directives.checks.lint
    if not command:
        return PASS
    ahead = lint_beside_tests.tests_alongside(c, j)  # a Go check: the tests meanwhile
    try:
        result = lint_beside_tests.run_lint(c, j, command, beside_tests=ahead is not None)
    except BaseException:
        if ahead is not None:
            ahead.cancel()
        raise
    findings = parse_lint(result.full_output, result.exit_code)
    # What the candidate shows becomes the next baseline if it lands: keep the lint.
    seen = Observed(lint=findings, lint_result=result)
    verdict = gates.lint_gate(j.baseline, seen)
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
    mine = [str(f) for f in findings if f.path in c.changed]
    verdict = replace(verdict, findings=mine, observed=seen)
    if ahead is not None and verdict.ok:  # taken by the tests stage
        verdict = replace(verdict, ahead=ahead.join())
    elif ahead is not None:  # a refused change: its tests are never read
        ahead.cancel()
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
    # The contract (judge/contract.py): the base's tests, in their base version and with
    # the base's test infrastructure, judge the candidate's code. What the change does to
    # tests cannot weaken them there; a test it adds is not there (in a pytest process, a
    # Go test's init(), a Mocha file loaded first, it could patch the code under test).
    judged = contract.judged_commit(c.tree, c.base, c.commit, c.changed, j.rule)
    review: list[str] = []  # what a person must look at, returned with the verdict
    if judged.unpaired:
        item = "changes inline Rust tests that cannot be paired with the base's: " + ", ".join(
            judged.unpaired
        )
        if not j.person:
            return shown(j, "integrity", Verdict(False, f"integrity: the change {item}", item))
        review.append(item)
    adapter = registry.for_space(j.space, command, c.tree)  # detected once for the run
    new_tests = registry.added_test_files(c.changed, j.rule, adapter)
    declared = _declared(c, j, adapter)
    focused: list[str] = []
    flaky: set[str] = set()  # found by the focused pass's reruns
    if adapter.can_select() and not ran_ahead(c, command, judged.commit):  # it has run
        focused = focused_tests(c, j, new_tests, adapter)
    if focused:
        result, report = run_test_command(
            c, j, "tests:affected", command, only=focused, commit=judged.commit
        )
        verdict = focused_verdict(j.baseline, report, result)
        if not verdict.ok and report is not None and adapter.reruns():
            # one failing run is no verdict: the suite decides once its reruns are in
            flaky = mark_flaky(c, j, command, report, commit=judged.commit)
            verdict = focused_verdict(j.baseline, report, result, flaky)
        j.record.step("tests:affected", verdict.ok, summary_text(report, result), result=result)
        if not verdict.ok:  # unless all it shows is for a person to review: the full run
            intent = behaviour_change.read(c, j, report, adapter, result.output, partial=True)
            if not _excused(j, report, result.output, declared | intent.excused):
                verdict = intent.annotate(verdict)
                return _missing_dependencies(c, j, verdict, result.output).noting(review)
    result, report = run_test_command(c, j, "tests", command, commit=judged.commit)
    # the change's own suite is this run, unless the tests:new run differs
    seen = Observed(tests=report, tests_result=result, own_tests=report)
    if adapter.reruns() and report is not None and gates.run_gate(result, report).ok:
        seen.flaky = flaky | mark_flaky(c, j, command, report, commit=judged.commit)
    # a person's change that rewrote the expectation of a test that fails on its code, or
    # updated tests that no longer build against it: a reviewer's question, once its own
    # suite passes them (judge/behaviour_change.py)
    intent = behaviour_change.read(c, j, report, adapter, result.output, declared=declared)
    excused = declared | intent.excused
    verdict = gates.tests_gate(j.baseline, seen, c.criterion, excused=excused, diff=c.diff)
    if verdict.ok and c.criterion.kind == "whole":  # the base does not build
        code = frozenset(c.changed).difference(judged.restored)  # the change's, as judged
        verdict = broken_base.judged_gate(c.tree, c.base, c.diff, report, result, code)
    j.record.step("tests", verdict.ok, summary_text(report, result, verdict), result=result)
    own_result = None
    if verdict.ok and not judged.is_candidate:
        # The suite as the user's own command will run it from now on: the change's own
        # tests, new and changed ones in.
        own_result, own = run_test_command(c, j, "tests:new", command)
        seen.own_tests = own
        # a person's xfail of a test failing on the base and its code: reviewed, not rerun
        xfails = intent.expected_failures(own)
        if adapter.reruns() and own is not None and report is not None:
            known = j.baseline.flaky | seen.flaky | xfails
            seen.flaky |= own_suite_flaky(c, j, command, report, own, judged.commit, known)
        verdict = gates.own_suite_gate(
            j.baseline,
            report,
            own,
            own_result,
            person=j.person,
            declared=excused | xfails,
            flaky=j.baseline.flaky | seen.flaky,
        )
        if verdict.ok and c.criterion.kind == "whole":
            verdict = broken_base.own_gate(report, own, own_result)
        j.record.step("tests:new", verdict.ok, summary_text(own, own_result), result=own_result)
    base = j.baseline.tests
    if verdict.ok and base is not None and report is not None:  # what a person reviews
        verdict = behaviour_change.confirm(intent, base, report, seen.own_tests, adapter)
        review.extend(verdict.review)
    if not verdict.ok:
        outputs = [r.output for r in (result, own_result) if r is not None]
        verdict = intent.annotate(verdict)
        found = _missing_dependencies(c, j, verdict, "\n".join(outputs)).noting(review)
        return replace(found, observed=seen)
    change = coverage.Change(c.tree, c.base, c.commit, j.rule, j.person)
    runs = [report, seen.own_tests if own_result else None]
    seen.coverage, unrun = coverage.coverage_step(change, adapter, runs, j.record)
    review += unrun  # a person's check: needs review when no test runs the changed code
    if declared:
        review.append(
            behaviour_change.declared_review(
                c, j, declared, report, seen.own_tests, adapter, intent
            )
        )
    infrastructure = criteria.infrastructure_changes(c.changed, j.rule)
    progress = criteria.progress_gate(
        j.baseline,
        seen,
        c.criterion,
        infrastructure=infrastructure,
        person=j.person,
        diff=c.diff,
        reviewed=intent.expected_failures(seen.own_tests),
    )
    if progress.needs_review:  # a person's change: listed for review, not refused
        progress = Verdict(True, progress.reason, review=progress.details)
    j.record.step("progress", progress.ok, progress.reason or c.criterion.describe())
    return replace(progress.noting(review), observed=seen)


def check_modules(c: Candidate, j: Judge) -> Verdict:
    """The suites of the nested modules the change touches (judge/module_suites.py)."""
    return module_suites.judge_modules(c, j, _declared)


def _missing_dependencies(c: Candidate, j: Judge, verdict: Verdict, output: str) -> Verdict:
    """A person's dependency change whose tests fail only for want of what it added: a
    person reviews it (judge/missing_deps.py); any other failure stays a rejection."""
    if not missing_deps.needs_person(c.review, j.person):
        return verdict
    names = missing_deps.missing_modules(output, c.tree)
    if not names:
        return verdict
    item = (
        f"its tests need {', '.join(names[:5])}, which the sandbox cannot install offline "
        f"(with what is installed: {first_line(verdict.reason)})"
    )
    j.record.step("tests", True, "needs review: " + item)
    return Verdict(True, PASS.reason, review=[item])


def _excused(j: Judge, report: TestReport | None, output: str, excused: frozenset[str]) -> bool:
    """Does a focused run fail only in what a person reviews (``excused``)?"""
    if not excused or report is None or j.baseline.tests is None:
        return False
    flaky = set(j.baseline.flaky | excused)
    return gates.regression_gate(j.baseline.tests, report, flaky, output, partial=True).ok


def _declared(c: Candidate, j: Judge, adapter: registry.Adapter) -> frozenset[str]:
    """The test ids the change declares it changes (behaviour_change.declared_tests)."""
    if not c.declared or j.baseline.tests is None:
        return frozenset()
    return behaviour_change.declared_tests(c, j.rule, adapter, j.baseline.tests.outcomes)


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
    check_modules,
    check_new_tests,  # judge/new_tests.py: a test the change adds can fail
    review,
    smoke,
)


# --- helpers --------------------------------------------------------------------------------


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
    if c.measured:  # the goal's measures, already improved: the harness measured them
        lines += ["measured (base → candidate):", *c.measured]
    if c.criterion.kind == "change":
        lines.append("Approve only if the change actually does the task.")
    return "\n".join(lines)
