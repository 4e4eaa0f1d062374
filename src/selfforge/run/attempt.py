"""One attempt at one task, repair rounds included, in its own worktree.

propose (the run's proposer, ``propose/``, leaves its change in the worktree) → commit
(the exact change, before any check runs) → the judge's pipeline
(``judge/stages.PIPELINE``) → land that commit. Any failing stage becomes feedback for
the next propose round, up to ``max_repairs``; the worktree is always released at the
end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.config import Directives
from selfforge.context import ContextBundle, build_context
from selfforge.edits import ApplyResult
from selfforge.errors import GitError
from selfforge.judge import criterion as criteria
from selfforge.judge.gates import describe_state
from selfforge.judge.new_tests import AddedTestsProver
from selfforge.judge.stage_log import Recorder, first_line
from selfforge.judge.stages import PIPELINE, Candidate, Judge, review, run_pipeline, smoke
from selfforge.judge.verdict import Criterion, Judgement, Observed, Outcome, Verdict
from selfforge.measure.gate import judge_goal
from selfforge.measure.history import keep
from selfforge.measure.stats import IMPROVED, WORSE
from selfforge.propose import registry
from selfforge.propose.protocol import Proposer, ProposerContext
from selfforge.repo import git
from selfforge.run.commit_message import landing_message, restate
from selfforge.run.engine import Engine

# the stages of a measured goal's candidate around its measuring
AFTER_MEASURING = (review, smoke)
BEFORE_MEASURING = tuple(stage for stage in PIPELINE if stage not in AFTER_MEASURING)


def context_key(commit: str, task: str, budget: int, lessons: list[str]) -> tuple[object, ...]:
    """What a context bundle is built from, besides the tree at ``commit``."""
    return (commit, task, budget, tuple(lessons))


@dataclass
class AttemptResult:
    attempt_id: int
    outcome: Outcome  # accepted | rejected | no_edits | error (judge/verdict.py)
    reason: str
    repairs: int = 0
    commit: str | None = None
    branch: str | None = None
    landed: bool = False
    diff: str = ""
    observed: Observed | None = None
    failures: list[str] = field(default_factory=list)
    candidate: int | None = None  # k of a best-of-N cycle's candidates (run --parallel)
    cycle: int = 0


class Attempt:
    def __init__(
        self,
        engine: Engine,
        cycle: int,
        task: str,
        base: str,
        baseline: Observed,
        edit_format: str | None = None,
        slot: str = "attempt",
        candidate: int | None = None,
    ):
        self.e, self.task, self.base, self.baseline = engine, task, base, baseline
        self.cycle, self.number = cycle, candidate
        self.slot = slot  # the worktree this attempt uses (one per candidate of a cycle)
        self.fmt = edit_format or engine.edit_format
        self.criterion: Criterion = criteria.for_task(task, baseline)
        self.goal = engine.d.goals.measures_for(task)  # the measures that judge it
        self.measured: list[str] = []  # the last round's figures, for the landing reason
        self.id = engine.journal.start_attempt(
            engine.run_id,
            cycle,
            task,
            base,
            criterion=self.criterion.describe(),
            candidate=candidate,
        )
        self.round = 0
        self.failures: list[str] = []
        self.critiqued = False
        self.observed: Observed | None = None
        self.candidate: Candidate | None = None  # the latest round's, as checked
        self.wt = Path()

    # --- driver ------------------------------------------------------------------------

    def run(self) -> AttemptResult:
        self.open()
        return self.finish(self._rounds())

    def open(self) -> None:
        """Check out the attempt's worktree (detached) at the base."""
        self.wt = self.e.ws.create_worktree(self.slot, self.base)

    def finish(self, result: AttemptResult) -> AttemptResult:
        """Journal how the attempt ended."""
        self.e.journal.finish_attempt(
            self.id,
            outcome=result.outcome,
            reason=result.reason,
            repairs=result.repairs,
            commit=result.commit,
            branch=result.branch,
            landed=result.landed,
            diff=result.diff or None,
            tree=git.tree_of(self.wt, result.commit) if result.commit else None,
        )
        return result

    def context(self) -> ContextBundle:
        lessons = self.e.lessons_for(self.task)
        budget = self.e.context_window // 2
        ready, self.e.ready_context = self.e.ready_context, None
        if ready is not None and ready[0] == context_key(self.base, self.task, budget, lessons):
            return ready[1]  # the same commit, task, budget and lessons: the same bundle
        return build_context(
            self.wt, self.task, state_dir=self.e.ws.state, token_budget=budget, lessons=lessons
        )

    def _rounds(self) -> AttemptResult:
        """Each round the proposer leaves a change in the worktree (propose/); it is
        committed and judged, and a rejection is the next round's feedback."""
        proposer = self.proposer(self.context())
        feedback = ""
        last: Verdict | Judgement | None = None
        while True:
            proposal = proposer.propose(feedback, self.round)
            applied = proposal.applied
            if proposal.gives_up or applied.n_edits == 0:
                if last is None and proposal.reminder and self._can_repair():
                    # A reply of prose (small models do this): reminded of the format once.
                    self._step("apply", False, "no edits found in the reply")
                    feedback = proposal.reminder
                    self.round += 1
                    continue
                why = proposal.why  # "": a reply with no edits, nothing more to say
                if last is not None:
                    if why:
                        self._step("apply", None, why)
                    then = f"; then {why}" if why else ""
                    return self.result(Outcome.REJECTED, last.reason + then)
                self._step("apply", None, why or "the model proposed no edits")
                said = why if proposal.gives_up else f"the model proposed {why or 'no edits'}"
                return self.result(Outcome.NO_EDITS, said)
            last = self._verify(applied)
            if (ended := self._after(last)) is not None:
                return ended
            feedback = last.feedback

    def proposer(self, bundle: ContextBundle) -> Proposer:
        """The run's proposer (propose/registry.py) for this attempt."""
        entry, _ = registry.chosen(self.e.d.model)
        return entry.make(self.proposer_context(bundle))

    def proposer_context(self, bundle: ContextBundle) -> ProposerContext:
        """What the proposer may use: the worktree, the task and the run's means."""
        e = self.e
        return ProposerContext(
            tree=self.wt,
            base=self.base,
            task=self.task,
            caller=e.caller,
            journal=e.journal,
            space=e.space,
            edit_format=self.fmt,
            directives=e.d,
            protected=tuple(e.loaded.protected),
            state=describe_state(self.baseline),
            bundle=bundle,
            context_window=e.context_window,
            reporter=e.reporter,
            run_id=e.run_id,
            attempt_id=self.id,
            on_start=e.ws.note_child_group,
        )

    def _after(self, verdict: Verdict | Judgement) -> AttemptResult | None:
        """What a round's verdict ends in (landed, or rejected with no repair left), or
        None: the next round repairs it."""
        if verdict.ok:
            return self.land()
        self.failures.append(verdict.reason)
        if not self._can_repair():
            return self.result(Outcome.REJECTED, verdict.reason)
        self.round += 1
        return None

    def _can_repair(self) -> bool:
        return self.round < self.e.d.limits.max_repairs

    # --- stages ------------------------------------------------------------------------

    def _verify(self, applied: ApplyResult) -> Verdict | Judgement:
        candidate = self.commit(applied)
        if isinstance(candidate, Verdict):
            return candidate
        if not self.goal:
            judgement = run_pipeline(candidate, self.judge())
            self.observed = candidate.observed
            return judgement
        # A measured goal: measured after every test gate, before the reviewers (they see
        # the figures) and the smoke run; refused by its measure, no reviewer is asked.
        judge = self.judge()
        judgement = run_pipeline(candidate, judge, BEFORE_MEASURING)
        self.observed = candidate.observed
        if judgement.ok:
            judgement = self.measure_goal(candidate, judgement)
        if judgement.ok:
            judgement = run_pipeline(candidate, judge, AFTER_MEASURING)
        return judgement

    def measure_goal(self, candidate: Candidate, judgement: Judgement) -> Judgement:
        """A goal with measures is judged by them after every test gate held (no test run
        shares the cores with them): improved, or it does not land. Each figure is a
        check of the attempt in the journal and a step of the live view."""
        e = self.e
        e.reporter.begin("measure")
        prover = AddedTestsProver(candidate, self.judge())  # a coverage goal's credit
        judgement, found = judge_goal(
            e.ws, e.d, e.space, self.base, candidate.commit, judgement, self.goal, prover=prover
        )
        for c in found:
            judged = c.name.split("[")[0] in self.goal  # a goal's measure, or a variation
            good = c.verdict == IMPROVED if judged else c.verdict != WORSE
            e.journal.record_check(
                run_id=e.run_id,
                attempt_id=self.id,
                round_=self.round,
                name=f"measure {c.name}",
                command=None,
                exit_code=None,
                passed=good,
                timed_out=False,
                duration_s=c.seconds,
                output=c.describe(),
                summary=c.to_json(),
            )
            self._step(f"measure {c.name}", good, c.describe(), c.seconds)
        keep(
            e.journal,
            "run",
            self.base,
            candidate.commit,
            found,
            run_id=e.run_id,
            attempt_id=self.id,
        )
        self.measured = candidate.measured = [c.describe() for c in found]
        return judgement

    def commit(self, applied: ApplyResult) -> Candidate | Verdict:
        """Commit the applied edits (what the checks judge and what lands) as this round's
        candidate; a verdict instead when there is nothing to judge."""
        if not applied.ok:
            self._step("apply", False, applied.failures[0].message if applied.failures else "")
            return Verdict(
                False, "edits did not apply: " + first_line(applied.feedback()), applied.feedback()
            )
        stage_paths(self.wt, applied.changed)  # the change under check is what is staged now
        changed = git.name_status(self.wt, "--cached", self.base)
        if not changed:
            self._step("apply", False, "the edits changed nothing")
            return Verdict(
                False,
                "the edits changed nothing",
                "Your edits left every file as it was; make the change the task asks.",
            )
        self._step("apply", True, f"{len(changed)} file(s): {', '.join(sorted(changed))[:80]}")
        # The commit is made now, from the applied edits, and is what lands: nothing the
        # checks write or stage afterwards can become part of it.
        commit = git.commit_index(self.wt, self.base, _message(self.task, self.e, self.id))
        candidate = Candidate(
            attempt_id=self.id,
            round=self.round,
            task=self.task,
            base=self.base,
            commit=commit,
            tree=self.wt,
            changed=changed,
            diff=git.diff(self.wt, self.base, commit),
            criterion=self.criterion,
            critique=not self.critiqued,
        )
        self.critiqued = self.critiqued or self.e.d.role_enabled("critique")
        self.candidate = candidate
        return candidate

    def judge(self, directives: Directives | None = None) -> Judge:
        e = self.e
        return Judge(
            directives=directives or e.d,
            protected=tuple(e.loaded.protected),
            baseline=self.baseline,
            space=e.space,
            rule=e.rule,
            caller=e.caller,
            record=Recorder(e.journal, e.reporter, e.run_id, e.ws.note_child_group),
            state_dir=e.ws.state,
            self_target=e.self_target,
        )

    def land(self) -> AttemptResult:
        assert self.candidate is not None
        c = self.candidate  # the checked commit, restated with why it passed (same tree)
        why = landing_message(
            self.e, self.id, self.task, self.baseline, self.observed, c.changed, self.round
        )
        sha, diff = restate(self.wt, c.commit, why), c.diff
        landed = self.e.ws.land(
            commit=sha, base_commit=self.base, mode=self.e.d.land.mode, name=self.task
        )
        self._step("land", True, landed.message)
        figures = "".join(f"measure {line}; " for line in self.measured)
        reason = "all gates passed; " + figures + landed.message
        return self.result(
            Outcome.ACCEPTED,
            reason,
            commit=sha,
            branch=landed.branch,
            landed=landed.landed,
            diff=diff,
        )

    def _step(self, name: str, ok: bool | None, detail: str = "", seconds: float = 0.0) -> None:
        self.e.reporter.step(name, ok, detail, seconds)

    # --- helpers -----------------------------------------------------------------------

    def result(self, outcome: Outcome, reason: str, **kw: object) -> AttemptResult:
        # A rejected attempt keeps the diff it was judged on (the journal, the dashboard
        # and the reflect role all show what was tried).
        kw.setdefault("diff", self.candidate.diff if self.candidate else "")
        return AttemptResult(
            self.id,
            outcome,
            reason,
            repairs=self.round,
            observed=self.observed,
            failures=self.failures,
            candidate=self.number,
            cycle=self.cycle,
            **kw,
        )  # type: ignore[arg-type]


def stage_paths(wt: Path, paths: list[str]) -> None:
    """Stage exactly the paths the edits wrote or deleted, never ``add -A`` of whatever the
    tree holds: a symlink or file a check left there must not become part of a change.
    Ignored files stay out, as ``add -A`` always left them."""
    if not paths:
        return
    literal = {"GIT_LITERAL_PATHSPECS": "1"}
    tracked = set(git.git("ls-files", "-z", "--", *paths, cwd=wt, env=literal).split("\0"))
    wanted = [p for p in paths if p in tracked or os.path.lexists(wt / p)]
    if not wanted:
        return
    proc = git.call("add", "-A", "--", *wanted, cwd=wt, env=literal)
    if proc.returncode != 0 and "ignored by one of your .gitignore" not in proc.stderr:
        raise GitError(f"git add failed: {proc.stderr.strip().splitlines()[-1:]}")


def _message(task: str, engine: Engine, attempt_id: int) -> str:
    return f"selfforge: {task}"[:4000] + (
        f"\n\nselfforge-run: {engine.run_id}\nselfforge-attempt: {attempt_id}\n"
    )
