"""One attempt at one task, repair rounds included, in its own worktree.

propose → apply → syntax → integrity → lint → critique → tests (blast radius first, then
all) → review → commit → land. Any failing stage becomes feedback for the next propose
round, up to ``max_repairs``; the worktree is always removed at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from selfforge import checks, gates, git
from selfforge.config import Directives, LoadedDirectives
from selfforge.context import ContextBundle, assemble_sections, blast_radius, build_context
from selfforge.edits import ApplyResult, apply_response, carry_over, format_instructions
from selfforge.gates import Observed, Verdict
from selfforge.journal import Journal
from selfforge.roles import Caller, has_concerns, parse_vote, render
from selfforge.ui import Reporter
from selfforge.workspace import Workspace


@dataclass
class Engine:
    """What every attempt of a run shares."""

    ws: Workspace
    journal: Journal
    caller: Caller
    loaded: LoadedDirectives
    reporter: Reporter
    run_id: int
    edit_format: str
    context_window: int
    lessons_for: Callable[[str], list[str]] = lambda task: []
    self_target: bool = False  # the repository is selfforge's own source

    @property
    def d(self) -> Directives:
        return self.loaded.directives


@dataclass
class AttemptResult:
    attempt_id: int
    outcome: str  # accepted | rejected | no_edits | error
    reason: str
    repairs: int = 0
    commit: str | None = None
    branch: str | None = None
    landed: bool = False
    diff: str = ""
    observed: Observed | None = None
    failures: list[str] = field(default_factory=list)


class Attempt:
    def __init__(
        self,
        engine: Engine,
        cycle: int,
        task: str,
        base: str,
        baseline: Observed,
        edit_format: str | None = None,
    ):
        self.e, self.task, self.base, self.baseline = engine, task, base, baseline
        self.fmt = edit_format or engine.edit_format
        self.id = engine.journal.start_attempt(engine.run_id, cycle, task, base)
        self.round = 0
        self.failures: list[str] = []
        self.critiqued = False
        self.dirty = False  # the worktree holds edits from an earlier round
        self.concerns = ""
        self.findings: list[str] = []
        self.observed: Observed | None = None
        self.wt = Path()

    # --- driver ------------------------------------------------------------------------

    def run(self) -> AttemptResult:
        wt, tmp_branch = self.e.ws.create_worktree("attempt", self.base, f"attempt-{self.id}")
        self.wt = wt
        try:
            result = self._rounds()
        finally:
            self.e.ws.release_worktree(wt, tmp_branch)
        self.e.journal.finish_attempt(
            self.id,
            outcome=result.outcome,
            reason=result.reason,
            repairs=result.repairs,
            commit=result.commit,
            branch=result.branch,
            landed=result.landed,
            diff=result.diff or None,
        )
        return result

    def _rounds(self) -> AttemptResult:
        bundle = build_context(
            self.wt,
            self.task,
            state_dir=self.e.ws.state,
            token_budget=self.e.context_window // 2,
            lessons=self.e.lessons_for(self.task),
        )
        feedback, carried = "", ""
        last: Verdict | None = None
        while True:
            reply = carried + self._propose(bundle, feedback)
            applied = self._apply(reply)
            if applied.n_edits == 0:
                if last is None:
                    self._step("apply", None, "the model proposed no edits")
                    return self._result("no_edits", "the model proposed no edits")
                return self._result("rejected", last.reason)
            carried = "" if applied.ok else carry_over(reply, applied, self.fmt)
            verdict = self._verify(applied)
            if verdict.ok:
                return self._land()
            self.failures.append(verdict.reason)
            last, feedback = verdict, verdict.feedback
            if self.round >= self.e.d.limits.max_repairs:
                return self._result("rejected", verdict.reason)
            self.round += 1

    def _apply(self, reply: str) -> ApplyResult:
        """Apply to the candidate as it stands; a repair reply written against the original
        files instead (models do both) is applied to a fresh copy of the base."""
        protected, fmt = self.e.loaded.protected, self.fmt
        applied = apply_response(self.wt, reply, protected=protected, fmt=fmt)
        if applied.ok or applied.n_edits == 0 or not self.dirty:
            self.dirty = self.dirty or applied.ok
            return applied
        candidate = git.git("write-tree", cwd=self.wt).strip()
        git.git("reset", "-q", "--hard", self.base, cwd=self.wt)
        git.git("clean", "-q", "-fd", cwd=self.wt)
        on_base = apply_response(self.wt, reply, protected=protected, fmt=fmt)
        if on_base.ok:
            return on_base
        git.git("read-tree", "-u", "--reset", candidate, cwd=self.wt)
        return applied  # its feedback speaks of the files the model was shown

    # --- stages ------------------------------------------------------------------------

    def _propose(self, bundle: ContextBundle, feedback: str) -> str:
        sections = {
            "directives": "\n".join(f"- {g}" for g in self.e.d.goals.items),
            "task": self.task,
            "instructions": format_instructions(self.fmt),
            "lessons": "\n".join(f"- {lesson}" for lesson in bundle.lessons),
            "repo_map": bundle.repo_map,
            "files": self._files_text(bundle),
            "failures": feedback,
        }
        prompt = assemble_sections(
            sections,
            context_window=self.e.context_window,
            reserve_output=min(8000, self.e.context_window // 4),
        )
        started = time.monotonic()
        reply = self.e.caller.ask(
            "propose",
            render("propose", sections=prompt.sections),
            attempt_id=self.id,
            hints={"task": self.task, "round": self.round},
            sections=prompt.tokens,
        )
        name = "propose" if self.round == 0 else f"repair {self.round}"
        self._step(name, None, f"{reply.usage.output_tokens} tokens", time.monotonic() - started)
        return reply.content

    def _files_text(self, bundle: ContextBundle) -> str:
        """The chosen files as they are now in the worktree (repairs see their own edits)."""
        blocks = []
        for item in bundle.files:
            path = self.wt / item.path
            if item.whole and path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
            else:
                text = item.text
            blocks.append(f"{item.path}\n```\n{text}\n```")
        return "\n\n".join(blocks)

    def _verify(self, applied: ApplyResult) -> Verdict:
        if not applied.ok:
            self._step("apply", False, applied.failures[0].message if applied.failures else "")
            return Verdict(
                False, "edits did not apply: " + _first(applied.feedback()), applied.feedback()
            )
        git.git("add", "-A", cwd=self.wt)
        changed = _name_status(self.wt, self.base)
        if not changed:
            self._step("apply", False, "the edits changed nothing")
            return Verdict(
                False,
                "the edits changed nothing",
                "Your edits left every file as it was; make the change the task asks.",
            )
        self._step("apply", True, f"{len(changed)} file(s): {', '.join(sorted(changed))[:80]}")
        for stage in (
            self._syntax,
            self._integrity,
            self._lint,
            self._critique,
            self._tests,
            self._review,
            self._smoke,
        ):
            verdict = stage(changed)
            if not verdict.ok:
                return verdict
        return gates.PASS

    def _syntax(self, changed: dict[str, str]) -> Verdict:
        if not self.e.d.checks.syntax:
            return gates.PASS
        started = time.monotonic()
        problems = checks.check_syntax(self.wt, changed)
        self._record(
            "syntax",
            None,
            0 if not problems else 1,
            not problems,
            False,
            time.monotonic() - started,
            "\n".join(map(str, problems)),
        )
        if not problems:
            return gates.PASS
        text = "\n".join(map(str, problems))
        return Verdict(
            False,
            f"syntax error: {problems[0].path}:{problems[0].line}: {problems[0].message}",
            f"Your edit broke the syntax:\n{text}",
        )

    def _integrity(self, changed: dict[str, str]) -> Verdict:
        verdict = gates.integrity_gate(
            changed, self._diff(), allow_test_edits=self.e.d.safety.allow_test_edits
        )
        if not verdict.ok:
            self._step("integrity", False, verdict.reason)
        return verdict

    def _lint(self, changed: dict[str, str]) -> Verdict:
        command = self.e.d.checks.lint
        if not command:
            return gates.PASS
        result = self._run("lint", command)
        findings = checks.parse_lint(result.output, result.exit_code)
        verdict = gates.lint_gate(self.baseline, Observed(lint=findings, lint_result=result))
        self._record(
            "lint",
            command,
            result.exit_code,
            verdict.ok,
            result.timed_out,
            result.duration_s,
            result.output,
            {"findings": len(findings)},
        )
        self.findings = [str(f) for f in findings if f.path in changed]
        return verdict

    def _critique(self, changed: dict[str, str]) -> Verdict:
        if not self.e.d.role_enabled("critique") or self.critiqued:
            return gates.PASS
        self.critiqued = True
        started = time.monotonic()
        prompt = render(
            "critique",
            task=self.task,
            goals=self.e.d.goals.items,
            diff=self._diff(),
            findings=self.findings,
        )
        reply = self.e.caller.ask("critique", prompt, attempt_id=self.id)
        concerns = has_concerns(reply.content)
        self._step("critique", not concerns, _first(reply.content), time.monotonic() - started)
        if not concerns or self.round >= self.e.d.limits.max_repairs:
            self.concerns = reply.content if concerns else ""
            return gates.PASS
        return Verdict(
            False,
            "critic: " + _first(reply.content),
            f"A critic raised concerns about your change:\n{reply.content}",
        )

    def _tests(self, changed: dict[str, str]) -> Verdict:
        command = self.e.d.checks.test
        if not command:
            return gates.PASS
        focused = self._focused_tests(list(changed))
        if focused:
            result, report = self._run_tests("tests*", command, only=focused)
            verdict = _focused_verdict(self.baseline, report, result)
            if not verdict.ok:
                return verdict
        result, report = self._run_tests("tests", command)
        self.observed = Observed(tests=report, tests_result=result)
        verdict = gates.tests_gate(self.baseline, self.observed)
        if verdict.ok:
            verdict = gates.collected_gate(self.baseline, self.observed)
        return verdict

    def _review(self, changed: dict[str, str]) -> Verdict:
        if not self.e.d.role_enabled("review"):
            return gates.PASS
        reviewers = self.e.d.roles.reviewers or ["correctness"]
        quorum = min(self.e.d.roles.quorum, len(reviewers))
        approvals, reasons = 0, []
        for focus in reviewers:
            started = time.monotonic()
            prompt = render(
                "review",
                focus=focus,
                task=self.task,
                diff=self._diff(),
                checks=self._observed_text(),
                concerns=self.concerns,
            )
            vote = parse_vote(
                self.e.caller.ask(
                    "review", prompt, attempt_id=self.id, hints={"focus": focus}
                ).content
            )
            self._step(f"review:{focus}", vote.approve, vote.reason, time.monotonic() - started)
            approvals += vote.approve
            if not vote.approve:
                reasons.append(f"{focus} reviewer: {vote.reason}")
        if approvals >= quorum:
            return gates.PASS
        reason = f"review: {approvals}/{len(reviewers)} approved (quorum {quorum}); " + "; ".join(
            reasons
        )
        return Verdict(False, reason, "Reviewers rejected your change:\n" + "\n".join(reasons))

    def _smoke(self, changed: dict[str, str]) -> Verdict:
        """A change to selfforge itself must still run the demo end to end."""
        if not self.e.self_target:
            return gates.PASS
        from selfforge.selfcheck import smoke_run

        started = time.monotonic()
        verdict = smoke_run(self.wt, self.e.ws.state)
        self._step("smoke", verdict.ok, verdict.reason, time.monotonic() - started)
        return verdict

    def _land(self) -> AttemptResult:
        diff = self._diff()
        message = (
            f"selfforge: {self.task}\n\nselfforge-run: {self.e.run_id}\n"
            f"selfforge-attempt: {self.id}\n"
        )
        sha = git.commit_all(self.wt, message[:4000])
        landed = self.e.ws.land(
            commit=sha, base_commit=self.base, mode=self.e.d.land.mode, name=self.task
        )
        self._step("land", True, landed.message)
        reason = "all gates passed; " + landed.message
        return self._result(
            "accepted", reason, commit=sha, branch=landed.branch, landed=landed.landed, diff=diff
        )

    # --- helpers -----------------------------------------------------------------------

    def _focused_tests(self, changed: list[str]) -> list[str]:
        command = self.e.d.checks.test or ""
        if not checks.is_pytest(command):
            return []
        radius = blast_radius(self.wt, changed, state_dir=self.e.ws.state)
        tests = [t for t in radius.tests if (self.wt / t).is_file()]
        return tests[:50] if tests else []

    def _run(self, name: str, command: str) -> checks.CommandResult:
        return checks.run_command(
            command, self.wt, self.e.d.checks.timeout_s, on_start=self.e.ws.note_child_group
        )

    def _run_tests(
        self, name: str, command: str, only: list[str] | None = None
    ) -> tuple[checks.CommandResult, checks.TestReport | None]:
        result, report = checks.run_tests(
            command,
            self.wt,
            self.e.d.checks.timeout_s,
            on_start=self.e.ws.note_child_group,
            only=only,
        )
        summary = _report_summary(report)
        ok = result.exit_code == 0
        self._record(
            name,
            command,
            result.exit_code,
            ok,
            result.timed_out,
            result.duration_s,
            result.output,
            summary,
        )
        return result, report

    def _record(
        self,
        name: str,
        command: str | None,
        exit_code: int | None,
        ok: bool,
        timed_out: bool,
        seconds: float,
        output: str,
        summary: dict[str, int] | None = None,
    ) -> None:
        self.e.journal.record_check(
            run_id=self.e.run_id,
            attempt_id=self.id,
            round_=self.round,
            name=name,
            command=command,
            exit_code=exit_code,
            passed=ok,
            timed_out=timed_out,
            duration_s=seconds,
            output=output,
            summary=summary,
        )
        detail = ", ".join(f"{v} {k}" for k, v in (summary or {}).items()) or _first(output)
        self._step(name, ok, detail, seconds)

    def _observed_text(self) -> str:
        obs = self.observed
        if obs is None or obs.tests_result is None:
            return "syntax and lint passed; no test command is configured"
        summary = _report_summary(obs.tests)
        counts = ", ".join(f"{v} {k}" for k, v in summary.items())
        return f"tests: exit {obs.tests_result.exit_code}; {counts}; no regression vs baseline"

    def _diff(self) -> str:
        return git.git("diff", "--cached", self.base, cwd=self.wt)

    def _step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.e.reporter.step(name, ok, detail, seconds)

    def _result(self, outcome: str, reason: str, **kw: object) -> AttemptResult:
        return AttemptResult(
            self.id,
            outcome,
            reason,
            repairs=self.round,
            observed=self.observed,
            failures=self.failures,
            **kw,
        )  # type: ignore[arg-type]


def _focused_verdict(
    baseline: Observed, report: checks.TestReport | None, result: checks.CommandResult
) -> Verdict:
    if report is None or baseline.tests is None:
        return gates.PASS
    broken = sorted(
        t for t, o in report.outcomes.items() if o != "passed" and t in baseline.tests.passed
    )
    if not broken:
        return gates.PASS
    reason = f"{len(broken)} test(s) passed before and fail now: " + "; ".join(broken[:3])
    return Verdict(False, reason, f"These tests now fail:\n{result.output}", broken)


def _report_summary(report: checks.TestReport | None) -> dict[str, int]:
    if report is None:
        return {}
    counts: dict[str, int] = {}
    for outcome in report.outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def _name_status(wt: Path, base: str) -> dict[str, str]:
    out = git.git("diff", "--cached", "--name-status", "--no-renames", base, cwd=wt)
    changed = {}
    for line in out.splitlines():
        status, _, path = line.partition("\t")
        changed[path] = status
    return changed


def _first(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
