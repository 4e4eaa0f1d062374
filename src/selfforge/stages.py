"""The checks of one attempt, cheapest first, each returning a ``gates.Verdict``.

syntax → integrity → lint → critique → tests (blast radius first, then all) → review →
smoke (only when the target is selfforge itself). ``Attempt`` runs them in this order.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge import checks, gates, git
from selfforge.context import blast_radius
from selfforge.gates import Observed, Verdict
from selfforge.roles import has_concerns, parse_vote, render

if TYPE_CHECKING:
    from selfforge.attempt import Engine


class Stages:
    """The checking half of an attempt; ``Attempt`` supplies the state below."""

    e: Engine
    id: int
    task: str
    base: str
    baseline: Observed
    round: int
    wt: Path
    critiqued: bool
    concerns: str
    findings: list[str]
    observed: Observed | None
    diff: str

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
        allow = self.e.d.safety.allow_test_edits
        verdict = gates.integrity_gate(changed, self.diff, allow_test_edits=allow)
        if verdict.ok and not allow:
            verdict = gates.test_config_gate(self.wt, self.base, changed)
        if not verdict.ok:
            self._step("integrity", False, verdict.reason)
        return verdict

    def _lint(self, changed: dict[str, str]) -> Verdict:
        command = self.e.d.checks.lint
        if not command:
            return gates.PASS
        result = self._run("lint", command)
        findings = checks.parse_lint(result.full_output, result.exit_code)
        # What the candidate shows becomes the next baseline if it lands: keep the lint.
        self.observed = Observed(lint=findings, lint_result=result)
        verdict = gates.lint_gate(self.baseline, self.observed)
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
        self.e.reporter.begin("critique")
        started = time.monotonic()
        facts = [*self.findings, *checks.complexity_findings(self.wt, changed)]
        prompt = render(
            "critique",
            task=self.task,
            goals=self.e.d.goals.items,
            diff=self.diff,
            findings=facts,
        )
        reply = self.e.caller.ask("critique", prompt, attempt_id=self.id)
        concerns = has_concerns(reply.content)
        self._step("critique", not concerns, first_line(reply.content), time.monotonic() - started)
        if not concerns or self.round >= self.e.d.limits.max_repairs:
            self.concerns = reply.content if concerns else ""
            return gates.PASS
        return Verdict(
            False,
            "critic: " + first_line(reply.content),
            f"A critic raised concerns about your change:\n{reply.content}",
        )

    def _tests(self, changed: dict[str, str]) -> Verdict:
        command = self.e.d.checks.test
        if not command:
            return gates.PASS
        # New test files are judged apart: in the judging run they could patch the code
        # under test (or pytest itself) from inside the process.
        new_tests = gates.added_test_files(changed) if checks.is_pytest(command) else []
        focused = [t for t in self._focused_tests(list(changed)) if t not in new_tests]
        if focused:
            result, report = self._run_tests("tests:affected", command, only=focused)
            verdict = _focused_verdict(self.baseline, report, result)
            self._step(
                "tests:affected", verdict.ok, _summary_text(report, result), result.duration_s
            )
            if not verdict.ok:
                return verdict
        result, report = self._run_tests("tests", command, ignore=new_tests)
        self.observed = self.observed or Observed()
        self.observed.tests, self.observed.tests_result = report, result
        verdict = gates.tests_gate(self.baseline, self.observed)
        if verdict.ok:
            verdict = gates.collected_gate(self.baseline, self.observed)
        self._step("tests", verdict.ok, _summary_text(report, result), result.duration_s)
        if verdict.ok and new_tests:
            result, report = self._run_tests("tests:new", command, only=new_tests)
            verdict = gates.new_tests_gate(self.baseline, report, result)
            self._step("tests:new", verdict.ok, _summary_text(report, result), result.duration_s)
        return verdict

    def _review(self, changed: dict[str, str]) -> Verdict:
        if not self.e.d.role_enabled("review"):
            return gates.PASS
        reviewers = self.e.d.roles.reviewers or ["correctness"]
        quorum = min(self.e.d.roles.quorum, len(reviewers))
        approvals, reasons = 0, []
        for focus in reviewers:
            self.e.reporter.begin(f"review:{focus}")
            started = time.monotonic()
            prompt = render(
                "review",
                focus=focus,
                task=self.task,
                diff=self.diff,
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

        self.e.reporter.begin("smoke run")
        started = time.monotonic()
        verdict = smoke_run(self.wt, self.e.ws.state)
        self._step("smoke", verdict.ok, verdict.reason, time.monotonic() - started)
        return verdict

    def _focused_tests(self, changed: list[str]) -> list[str]:
        command = self.e.d.checks.test or ""
        if not checks.is_pytest(command):
            return []
        radius = blast_radius(self.wt, changed, state_dir=self.e.ws.state)
        tests = [t for t in radius.tests if (self.wt / t).is_file()]
        tracked = git.git("ls-files", "-z", "*.py", cwd=self.wt).split("\0")
        every_test = [p for p in tracked if p and gates.is_test_path(p)]
        if len(tests) * 2 > len(every_test):  # not much faster than the full run it precedes
            return []
        return tests[:50]

    def _run(self, name: str, command: str) -> checks.CommandResult:
        self.e.reporter.begin(name)
        return checks.run_command(
            command, self.wt, self.e.d.checks.timeout_s, on_start=self.e.ws.note_child_group
        )

    def _run_tests(
        self,
        name: str,
        command: str,
        only: list[str] | None = None,
        ignore: list[str] | None = None,
    ) -> tuple[checks.CommandResult, checks.TestReport | None]:
        """Run and journal a test command; the caller reports the step once it is judged."""
        self.e.reporter.begin(name)
        result, report = checks.run_tests(
            command,
            self.wt,
            self.e.d.checks.timeout_s,
            on_start=self.e.ws.note_child_group,
            only=only,
            ignore=ignore,
        )
        self._record(
            name,
            command,
            result.exit_code,
            result.exit_code == 0,
            result.timed_out,
            result.duration_s,
            result.output,
            _report_summary(report),
            show=False,
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
        show: bool = True,
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
        if show:
            detail = ", ".join(f"{v} {k}" for k, v in (summary or {}).items())
            self._step(name, ok, detail or first_line(output), seconds)

    def _observed_text(self) -> str:
        obs = self.observed
        if obs is None or obs.tests_result is None:
            return "syntax and lint passed; no test command is configured"
        summary = _report_summary(obs.tests)
        counts = ", ".join(f"{v} {k}" for k, v in summary.items())
        return f"tests: exit {obs.tests_result.exit_code}; {counts}; no regression vs baseline"

    def _step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.e.reporter.step(name, ok, detail, seconds)


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


def _summary_text(report: checks.TestReport | None, result: checks.CommandResult) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in _report_summary(report).items())
    return counts or f"exit {result.exit_code}"


def _report_summary(report: checks.TestReport | None) -> dict[str, int]:
    if report is None:
        return {}
    counts: dict[str, int] = {}
    for outcome in report.outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
