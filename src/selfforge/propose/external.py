"""An outside coding agent as the proposer (``run --agent NAME``; adapters in
``agents.py``).

Each round the agent is started once on the task (a repair round: on the judge's
rejection, with its rejected change still in the files) in the attempt's worktree,
inside the proposer sandbox: the check sandbox with git cut at the base
(``worktree.proposer_space``), the network on (it calls its model), a home of its own
that is thrown away, holding only the agent's configuration (read-only, or a copy), and
a folder outside the worktree for the task file and its own trajectory file. When it
exits, whatever the worktree holds is the candidate, judged as any other. Its transcript
and trajectory are journaled as steps; its tokens and cost, where it reports them, are
counted in the run's budget and journaled as a model call of role ``agent``.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import stat
import tempfile
from pathlib import Path

from selfforge.edits import ApplyResult
from selfforge.errors import BudgetExceeded
from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox.check_git import scratch_dir
from selfforge.judge.sandbox.command import CheckSpace, CommandResult, run_command
from selfforge.models.base import Reply, Usage
from selfforge.models.secrets import mask, remember, remember_file
from selfforge.propose import trajectory
from selfforge.propose.actions import bounded
from selfforge.propose.agent_models import endpoint_for
from selfforge.propose.agent_records import Spend
from selfforge.propose.agents import Adapter, Job, adapter_for
from selfforge.propose.explore import Done, LimitReached, Stop
from selfforge.propose.protocol import Proposal, ProposerContext
from selfforge.propose.trajectory import Step
from selfforge.propose.worktree import change, proposer_space, reset_index

OUTPUT_KB = 16 * 1024  # an agent's transcript is long; past this it is stopped
TRAJECTORY_BYTES = 8 * 1024 * 1024  # its own trajectory file, read at most this much


class AgentProposer:
    """The agent proposer of one attempt; ``propose`` once per round."""

    def __init__(self, ctx: ProposerContext) -> None:
        self.ctx, settings = ctx, ctx.directives.model
        self.adapter = adapter_for(settings.agent or "")
        self.program = self.adapter.locate()
        self.files = self.adapter.files(ctx.space.repo)  # shown read-only (cmd: agents)
        self.endpoint = endpoint_for(settings.agent_model or _network_spec(settings.spec))
        if self.endpoint is not None and self.endpoint.key:
            remember(self.endpoint.key)  # masked in every transcript journaled
        self.space = agent_space(ctx.space, ctx.tree, ctx.base)
        self.count = 0
        self.round = 0  # the attempt's round the agent works on

    def propose(self, feedback: str, round: int) -> Proposal:
        """The agent run once; what the worktree then holds is its candidate."""
        self.round = round
        stop = self.run(feedback)
        return Proposal(self.candidate(), stop.message, stop.gives_up)

    def run(self, feedback: str = "") -> Stop:
        a = self.ctx
        reset_index(a.tree, a.base)
        if (why := _over_budget(a)) is not None:
            # Spent before this round did anything: nothing new to judge, so the run stops
            # here with the budget's reason, as a one-shot or exploring run does (else each
            # cycle left would be an attempt with no edits).
            self._record("limit", None, f"stopped at the run's budget: {why}")
            raise BudgetExceeded(why)
        io = Path(tempfile.mkdtemp(prefix="selfforge-agent-", dir=scratch_dir(a.tree)))
        atexit.register(shutil.rmtree, io, True)
        try:
            goals = [*a.directives.goals.items]
            result = self._start(io, task_text(a.task, goals, feedback), feedback)
        finally:
            shutil.rmtree(io, ignore_errors=True)
        how = "timed out" if result.timed_out else f"exited {result.exit_code}"
        if result.timed_out:
            seconds = a.directives.model.agent_seconds
            return LimitReached(f"the agent {how} ({seconds:g} s, [model] agent_seconds)")
        return Done(f"the agent {self.adapter.name} {how}")

    def _start(self, io: Path, task: str, feedback: str) -> CommandResult:
        """Run the agent once on ``task``; journal what it did and spent."""
        a = self.ctx
        (io / "task.md").write_text(task)
        self._record("feedback" if feedback else "task", None, task)
        job = Job(io / "task.md", io, self.endpoint)
        command = self.adapter.argv(self.program, job)
        a.reporter.begin(f"agent {self.adapter.name}")
        result = run_command(
            command,
            a.tree,
            a.directives.model.agent_seconds,
            self.space,
            extra_env=agent_env(self.adapter, job),
            head=a.base,
            on_start=a.on_start,
            binds=agent_binds(
                self.adapter, Path(self.program) if self.program else None, io, self.files
            ),
        )
        own = _read_own(io / self.adapter.trajectory) if self.adapter.trajectory else ""
        for step in self.adapter.steps(own or result.full_output):
            self._record(step.kind, step.action and mask(step.action), mask(step.output))
        spend = self.adapter.spend(result.full_output, own)
        self._count(spend, task, result.full_output, result.duration_s)
        limit = f"\n[stopped at the {result.limit} limit]" if result.limit else ""
        if result.timed_out:
            seconds = a.directives.model.agent_seconds
            limit = f"\n[stopped after {seconds:g} s, [model] agent_seconds]"
        spent = Step(0, 0, "", None, "", None, spend.input_tokens, spend.output_tokens)
        spent.cost_usd, spent.seconds = spend.cost_usd, result.duration_s
        # Its command line is no reply of a model: the output, not the action.
        shown = f"$ {command}\n{bounded(result.full_output)}{limit}"
        self._record("transcript", None, shown, result.exit_code, spent)
        return result

    def candidate(self) -> ApplyResult:
        return change(self.ctx.tree, self.ctx.base)

    def _count(self, spend: Spend, task: str, output: str, seconds: float) -> None:
        """The agent's tokens and cost into the run's budget and the journal's calls."""
        e, usage = self.ctx, Usage(spend.input_tokens, spend.output_tokens)
        e.caller.budget.record(Reply("", usage, cost_usd=spend.cost_usd))
        e.journal.record_call(
            run_id=e.run_id,
            attempt_id=e.attempt_id,
            role="agent",
            model=f"agent:{self.adapter.name}",
            prompt=mask(task),
            response=mask(bounded(output)),
            error=None,
            input_tokens=spend.input_tokens,
            output_tokens=spend.output_tokens,
            cost_usd=spend.cost_usd,
            latency_s=seconds,
        )

    def _record(
        self,
        kind: str,
        action: str | None,
        output: str,
        exit_code: int | None = None,
        spent: Step | None = None,
    ) -> None:
        number = 0 if kind == "task" else self.count + 1
        self.count = number
        step = dataclasses.replace(
            spent or Step(0, 0, "", None, ""),
            round=self.round,
            step=number,
            kind=kind,
            action=action,
            output=output,
            exit_code=exit_code,
        )
        trajectory.record(self.ctx.journal, self.ctx.run_id, self.ctx.attempt_id, step)
        if kind == "transcript":
            self.ctx.reporter.step(f"agent {number}", None, step.headline(), step.seconds)


def agent_space(space: CheckSpace, tree: Path, base: str) -> CheckSpace:
    """The proposer sandbox of an agent: explore's (git cut at the base; the user's
    checkout, its .git, .selfforge/ and selfforge's state hidden) with the network on,
    and room for a long transcript."""
    past = proposer_space(space, tree, base)
    return dataclasses.replace(past, network=True, output_kb=max(space.output_kb, OUTPUT_KB))


def agent_env(adapter: Adapter, job: Job) -> dict[str, str]:
    """What the agent sees beyond a check's variables: the task; its endpoint and key,
    or without a model of ours, its provider's key variables as set here."""
    env = {"SELFFORGE_TASK_FILE": str(job.task_file), "NO_COLOR": "1", "TERM": "dumb"}
    env["SELFFORGE_TASK"] = job.task_file.read_text()
    if job.endpoint is None:
        for name in adapter.keys:
            if value := os.environ.get(name, "").strip():
                remember(value)
                env[name] = value
    return {**env, **adapter.env(job)}


def agent_binds(
    adapter: Adapter, program: Path | None, io: Path, files: tuple[Path, ...] = ()
) -> tuple[sandbox.Bind, ...]:
    """The job's folder (read-write, at its own path); the agent's installation where
    the check policy would not show it, and the files a ``cmd:`` agent's command names
    there (read-only, at their own paths); its configuration under the sandbox's home:
    read-only, or copied into the job's folder first (what it writes there is lost)."""
    home, inside = Path.home(), Path(sandbox.INSIDE_HOME)
    binds = [sandbox.Bind(io, io, writable=True), *(sandbox.Bind(f, f) for f in files)]
    if program is not None:
        binds += [sandbox.Bind(p, p) for p in adapter.shown(program)]
    for rel in adapter.config:
        if (home / rel).exists():
            binds.append(sandbox.Bind(home / rel, inside / rel))
            _remember_secrets(home / rel)
    for rel in adapter.copied:
        source, copy = home / rel, io / "home" / rel
        if source.is_file() and not source.is_symlink():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            binds.append(sandbox.Bind(copy, inside / rel, writable=True))
            _remember_secrets(source)
    return tuple(binds)


_SECRET_WORDS = ("cred", "auth", "token", "key", ".env", "oauth")


def _remember_secrets(path: Path) -> None:
    """The agent's own credentials are shown to it (it signs in with them): their values
    are masked wherever selfforge stores or shows its output."""
    files = [p for p in path.iterdir() if p.is_file()] if path.is_dir() else [path]
    for file in files:
        if any(word in file.name.lower() for word in _SECRET_WORDS):
            remember_file(file)


def task_text(task: str, goals: list[str], feedback: str) -> str:
    """What the agent is asked: the task, the goals, how its work is judged."""
    lines = [f"Task: {task}", ""]
    if goals and goals != [task]:
        lines += ["The project's goals:", *(f"- {g}" for g in goals), ""]
    lines.append(
        "Change the files in this folder to do the task. Do not commit. When you stop, "
        "the change you leave is run through the project's own tests by selfforge, on the "
        "project's original tests: editing, skipping or weakening tests will not pass."
    )
    if feedback:
        lines += ["", "selfforge's checks rejected your change (still in the files):", feedback]
    return "\n".join(lines) + "\n"


def _network_spec(spec: str | None) -> str | None:
    return spec if spec and not spec.startswith("script:") else None


def _over_budget(ctx: ProposerContext) -> str | None:
    budget = ctx.caller.budget
    if budget.usd is not None and 0 < budget.usd <= budget.spent_usd:
        return (
            f"the run's budget of ${budget.usd:.2f} is spent (${budget.spent_usd:.4f}); "
            "raise limits.budget_usd in selfforge.toml"
        )
    if budget.tokens is not None and budget.spent_tokens >= budget.tokens:
        return (
            f"the run's token budget ({budget.tokens:,}) is spent ({budget.spent_tokens:,}); "
            "raise limits.budget_tokens in selfforge.toml"
        )
    return None


def _read_own(path: Path) -> str:
    """The agent's own trajectory file, from a folder it could write: never through a
    link, never a FIFO or device, at most TRAJECTORY_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        return f.read(TRAJECTORY_BYTES).decode("utf-8", errors="replace")
