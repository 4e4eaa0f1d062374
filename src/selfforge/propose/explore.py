"""The exploring proposer (``run --proposer explore``): an agent loop in the spirit of
mini-swe-agent.

``run()`` repeats ``step() = execute(query())``: the model is shown the task, the goals,
the repo map and every step so far, and answers with one action (``actions.py``); a
command runs in the attempt's worktree inside the check sandbox, with git cut at the
base (``worktree.py``); edits are applied with the edit engine. What ends a round travels
as a ``Stop``: the model's DONE or CANNOT, or a limit on steps, wall time or the run's
budget. Whatever the worktree then holds is the candidate, and the judge decides on it
as on any other: nothing the model ran counts. Every step is journaled
(``trajectory.py``).
"""

from __future__ import annotations

import dataclasses
import time

from selfforge.context.assemble import PROMPT_OVERHEAD
from selfforge.edits import ApplyResult, apply_response, format_instructions
from selfforge.errors import BudgetExceeded
from selfforge.judge.sandbox.command import run_command
from selfforge.models.base import ReplyTruncated
from selfforge.models.generation import margin_tokens
from selfforge.models.tokens import estimate_tokens
from selfforge.propose import trajectory
from selfforge.propose.actions import (
    COMMAND_TIMEOUT,
    TIME_LEFT,
    FormatError,
    observation,
    parse_action,
)
from selfforge.propose.protocol import Proposal, ProposerContext
from selfforge.propose.trajectory import Step
from selfforge.propose.worktree import change, proposer_space, reset_index
from selfforge.roles.caller import PERSONAS, render

LEFT_OUT = "[left out to fit the model's context window]"
CUT = (
    "Your reply was cut at the output limit before it ended, so none of it was used. "
    "Answer briefly: one action, with at most a sentence before it."
)


class Stop(Exception):
    """Ends a round of exploring; the message says why."""

    kind = "stop"
    gives_up = False  # the model said the task cannot be done: no candidate

    @property
    def message(self) -> str:
        return str(self)


class Done(Stop):
    kind = "done"


class Cannot(Stop):
    kind, gives_up = "cannot", True


class LimitReached(Stop):
    kind = "limit"


@dataclasses.dataclass(frozen=True)
class Turn:
    """One step as the model is shown it again: its reply and what followed."""

    number: int
    action: str | None
    observation: str


class Explorer:
    """The exploring proposer of one attempt; ``propose`` once per round."""

    def __init__(self, ctx: ProposerContext) -> None:
        self.ctx, self.settings = ctx, ctx.directives.model
        self.space = proposer_space(ctx.space, ctx.tree, ctx.base)
        self.system = render(
            "explore_system",
            persona=PERSONAS["propose"],
            instructions=format_instructions(ctx.edit_format),
        )
        self.intro = {
            "goals": "\n".join(f"- {g}" for g in ctx.directives.goals.items),
            "task": ctx.task,
            "state": ctx.state,
            "lessons": "\n".join(f"- {lesson}" for lesson in ctx.bundle.lessons),
            "repo_map": ctx.bundle.repo_map,
        }
        self.round = 0  # the attempt's round being explored
        self.history: list[Turn] = []
        self.count = 0  # steps of the whole attempt, as numbered for the model
        self.steps, self.started = 0, 0.0  # of this round, for its limits
        self.reply, self.spent = "", Step(0, 0, "", None, "")

    # --- the loop ------------------------------------------------------------------------

    def propose(self, feedback: str, round: int) -> Proposal:
        """A round of exploring; what the worktree then holds is its candidate."""
        self.round = round
        stop = self.run(feedback)
        return Proposal(self.candidate(), stop.message, stop.gives_up)

    def run(self, feedback: str = "") -> Stop:
        """Explore from the worktree as it stands (a repair round: the rejected change)
        until a stop; ``feedback`` (the judge's rejection) is the first thing seen."""
        reset_index(self.ctx.tree, self.ctx.base)
        self.steps, self.started = 0, time.monotonic()
        if not self.history:
            self._record("task", None, self._render([], self.settings.explore_steps))
        if feedback:
            self._observe(None, _rejected(feedback), "feedback")
        while True:
            try:
                self.step()
            except FormatError as exc:
                self._observe(self.reply, str(exc), "invalid")
            except Stop as stop:
                shown = self.reply if isinstance(stop, Done | Cannot) else None
                self._record(stop.kind, shown, stop.message, spent=shown is not None)
                return stop

    def step(self) -> None:
        self.execute(self.query())

    def query(self) -> str:
        s = self.settings
        if self.steps >= s.explore_steps:
            raise LimitReached(
                f"stopped at the step limit ({s.explore_steps}, [model] explore_steps)"
            )
        if time.monotonic() - self.started >= s.explore_seconds:
            raise LimitReached(
                f"stopped at the time limit ({s.explore_seconds:g} s, [model] explore_seconds)"
            )
        self.steps += 1
        started = time.monotonic()
        try:
            reply = self.ctx.caller.ask(
                "propose",
                self.prompt(),
                attempt_id=self.ctx.attempt_id,
                hints={"task": self.ctx.task, "round": self.round, "step": self.count + 1},
                system=self.system,
            )
        except BudgetExceeded as exc:
            why = f"stopped at the run's budget: {exc.message}"
            if self.steps == 1:  # spent before this round did anything: nothing new to
                # judge, so the run stops here, as a one-shot run does (else every cycle
                # left would be an attempt with no edits)
                self._record("limit", None, why)
                raise
            raise LimitReached(why) from None
        except ReplyTruncated:  # journaled by the caller; a small model rambles
            self.reply, self.spent = (
                "",
                Step(0, 0, "", None, "", seconds=time.monotonic() - started),
            )
            raise FormatError(CUT) from None
        u = reply.usage
        self.spent = Step(0, 0, "", None, "", None, u.input_tokens, u.output_tokens, reply.cost_usd)
        self.spent.seconds = time.monotonic() - started
        self.reply = reply.content
        return reply.content

    def execute(self, reply: str) -> None:
        action = parse_action(reply, self.ctx.edit_format)
        if action.kind == "done":
            raise Done("the model said it was done")
        if action.kind == "cannot":
            raise Cannot(f"the model said it cannot be done: {action.text}")
        if action.kind == "bash":
            left = self.settings.explore_seconds - (time.monotonic() - self.started)
            timeout = max(1.0, min(self.settings.explore_command_s, left))
            # Named as the limit it came from: the round's end, not the command's own.
            why = TIME_LEFT if left < self.settings.explore_command_s else COMMAND_TIMEOUT
            result = run_command(
                action.text,
                self.ctx.tree,
                timeout,
                self.space,
                head=self.ctx.base,
                on_start=self.ctx.on_start,
            )
            self.spent.seconds += result.duration_s
            seen = observation(result, timeout, why)
            self._observe(reply, seen, "bash", result.exit_code)
            return
        ctx = self.ctx
        applied = apply_response(
            ctx.tree, action.text, protected=ctx.protected, fmt=ctx.edit_format
        )
        done = f"The edits applied; changed: {', '.join(applied.changed) or 'nothing'}."
        self._observe(reply, done if applied.ok else applied.feedback(), "edit")

    def candidate(self) -> ApplyResult:
        """The worktree's change since the base, as the edits the attempt commits."""
        return change(self.ctx.tree, self.ctx.base)

    # --- what the model is shown, and the journal --------------------------------------

    def prompt(self) -> str:
        """The step's prompt, within the context window: the oldest steps' outputs are
        left out first, then their actions."""
        window = self.ctx.context_window
        room = window - min(8000, window // 4) - margin_tokens(window) - PROMPT_OVERHEAD
        room -= estimate_tokens(self.system)
        left = self.settings.explore_steps - self.steps + 1
        history = list(self.history)
        text = self._render(history, left)
        for i in range(2 * len(history)):
            if estimate_tokens(text) <= room:
                break
            turn = history[i % len(history)]
            shorter = {"observation": LEFT_OUT} if i < len(history) else {"action": LEFT_OUT}
            history[i % len(history)] = dataclasses.replace(turn, **shorter)
            text = self._render(history, left)
        return text

    def _render(self, history: list[Turn], left: int) -> str:
        return render("explore_step", history=history, left=left, **self.intro)

    def _observe(
        self, action: str | None, seen: str, kind: str, exit_code: int | None = None
    ) -> None:
        self.history.append(Turn(self.count + 1, action, seen))
        self._record(kind, action, seen, exit_code, spent=action is not None)

    def _record(
        self,
        kind: str,
        action: str | None,
        output: str,
        exit_code: int | None = None,
        spent: bool = False,
    ) -> None:
        number = 0 if kind == "task" else self.count + 1
        self.count = number
        s = self.spent if spent else Step(0, 0, "", None, "")
        step = dataclasses.replace(
            s, round=self.round, step=number, kind=kind, action=action, output=output
        )
        step.exit_code = exit_code
        trajectory.record(self.ctx.journal, self.ctx.run_id, self.ctx.attempt_id, step)
        if kind != "task":
            self.ctx.reporter.step(f"explore {number}", None, step.headline(), step.seconds)


def _rejected(feedback: str) -> str:
    return (
        "selfforge's checks rejected the change you made; the files still hold it. "
        f"Fix what they found:\n{feedback}"
    )
