"""What every proposer is: the context an attempt hands it, what it must do each round,
and what a round leaves.

An attempt (``run/attempt.py``) builds one ``ProposerContext`` and makes its proposer
from it once (``registry.py`` names the factory); then, each round, it calls
``propose(feedback, round)``. The proposer leaves its change applied in the context's
worktree and says so in a ``Proposal``; the attempt commits that change, judges it, and
lands it or hands the judge's feedback to the next round. A proposer never commits,
judges or lands, and never sees the attempt itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from selfforge.config import Directives
from selfforge.context import ContextBundle
from selfforge.edits import ApplyResult
from selfforge.journal.store import Journal
from selfforge.judge.sandbox.command import CheckSpace
from selfforge.roles.caller import Caller
from selfforge.ui.reporters import Reporter


@dataclass(frozen=True)
class ProposerContext:
    """What a proposer may use for one attempt, all rounds of it."""

    tree: Path  # the attempt's worktree, checked out at ``base``: where the change is made
    base: str  # the commit the change is made on
    task: str
    caller: Caller  # asks the model in a role, within the run's budget, journaled
    journal: Journal
    space: CheckSpace  # how the checks run here; a proposer running commands cuts it down
    edit_format: str  # how the model is asked to write edits (edits/formats.py)
    directives: Directives  # the goals and [model] settings (explore_steps, agent, ...)
    protected: tuple[str, ...]  # paths no edit may touch
    state: str  # the base's checks in words (judge.gates.describe_state), for prompts
    bundle: ContextBundle  # the repo map, files and lessons chosen for the task
    context_window: int  # the model's, in tokens
    reporter: Reporter  # where steps are shown
    run_id: int
    attempt_id: int
    on_start: Callable[[int | None], None]  # told each command's process group (recovery)


@dataclass
class Proposal:
    """What one round left in the worktree: the change, applied (the candidate the attempt
    commits), or none, and why the round ended."""

    applied: ApplyResult  # what was written, in the tree; n_edits == 0: no candidate
    stop: str = ""  # why the round ended, in the proposer's words; "": one reply, no more
    gives_up: bool = False  # the model said the task cannot be done: no candidate
    reminder: str = ""  # a reply with no edits in it: what to say to ask once more

    @property
    def why(self) -> str:
        """Why there is no candidate, as the attempt says it ("": a reply with no edits)."""
        if self.gives_up:
            return self.stop
        return f"no edits: {self.stop}" if self.stop else ""


class Proposer(Protocol):
    """Makes the change an attempt judges; one object per attempt, so it may remember
    earlier rounds (an exploring proposer keeps its history)."""

    def propose(self, feedback: str, round: int) -> Proposal:
        """Round ``round`` (0 first, then each repair): leave a change in the worktree.
        ``feedback``: the judge's reason the last round's change was rejected ("" first);
        the worktree still holds that change."""
        ...


Factory = Callable[[ProposerContext], Proposer]
