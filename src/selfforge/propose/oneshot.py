"""The one-shot proposer (``run --proposer oneshot``, the default): one model call per
round, answering with edits, applied to the worktree with the edit engine.

The prompt (``prompts/propose.j2``) holds the goals, the task, the base's state, the
format of edits, lessons, the repo map and the chosen files as the worktree holds them
now (a repair round sees its own edits) and the judge's feedback. A reply of prose with
no edits is answered once with a reminder of the format; the good edits of a reply that
partly failed to apply are carried into the next round's reply.
"""

from __future__ import annotations

import time

from selfforge.context import assemble_sections
from selfforge.edits import ApplyResult, apply_response, carry_over, format_instructions
from selfforge.propose.protocol import Proposal, ProposerContext
from selfforge.repo import git
from selfforge.repo.treefiles import shown_text
from selfforge.roles.caller import render


class OneShot:
    """The one-shot proposer of one attempt."""

    def __init__(self, ctx: ProposerContext) -> None:
        self.ctx = ctx
        self.carried = ""  # the good edits of a reply that partly failed, for the next
        self.reminded = False  # the format was recalled once already
        self.dirty = False  # the worktree holds edits from an earlier round

    def propose(self, feedback: str, round: int) -> Proposal:
        reply = self.carried + self.ask(feedback, round)
        applied = self.apply(reply)
        if applied.n_edits == 0:
            # Prose without edits (small models do this): remind it of the format once.
            reminder = "" if self.reminded or not reply.strip() else applied.feedback()
            self.reminded = self.reminded or bool(reminder)
            return Proposal(applied, reminder=reminder)
        self.carried = "" if applied.ok else carry_over(reply, applied, self.ctx.edit_format)
        return Proposal(applied)

    def ask(self, feedback: str, round: int) -> str:
        """The model's reply for this round (one journaled call)."""
        ctx = self.ctx
        sections = {
            "directives": "\n".join(f"- {g}" for g in ctx.directives.goals.items),
            "task": ctx.task,
            "state": ctx.state,
            "instructions": format_instructions(ctx.edit_format),
            "lessons": "\n".join(f"- {lesson}" for lesson in ctx.bundle.lessons),
            "repo_map": ctx.bundle.repo_map,
            "files": self._files_text(),
            "failures": feedback,
        }
        ctx.reporter.begin("propose" if round == 0 else f"repair {round}")
        prompt = assemble_sections(
            sections,
            context_window=ctx.context_window,
            reserve_output=min(8000, ctx.context_window // 4),
        )
        started = time.monotonic()
        reply = ctx.caller.ask(
            "propose",
            render("propose", sections=prompt.sections),
            attempt_id=ctx.attempt_id,
            hints={"task": ctx.task, "round": round},
            sections=prompt.tokens,
        )
        name = "propose" if round == 0 else f"repair {round}"
        detail = f"{reply.usage.output_tokens} tokens"
        ctx.reporter.step(name, None, detail, time.monotonic() - started)
        return reply.content

    def apply(self, reply: str) -> ApplyResult:
        """Apply to the candidate as it stands; a repair reply written against the original
        files instead (models do both) is applied to a fresh copy of the base."""
        tree, protected, fmt = self.ctx.tree, self.ctx.protected, self.ctx.edit_format
        applied = apply_response(tree, reply, protected=protected, fmt=fmt)
        if applied.ok or applied.n_edits == 0 or not self.dirty:
            self.dirty = self.dirty or applied.ok
            return applied
        candidate = git.git("write-tree", cwd=tree).strip()
        git.git("reset", "-q", "--hard", self.ctx.base, cwd=tree)
        git.git("clean", "-q", "-fd", cwd=tree)
        on_base = apply_response(tree, reply, protected=protected, fmt=fmt)
        if on_base.ok:
            return on_base
        git.git("read-tree", "-u", "--reset", candidate, cwd=tree)
        return applied  # its feedback speaks of the files the model was shown

    def _files_text(self) -> str:
        """The chosen files as they are now in the worktree (repairs see their own edits);
        never through a symlink out of the tree, never a FIFO (treefiles.py)."""
        blocks = []
        for item in self.ctx.bundle.files:
            text = shown_text(self.ctx.tree, item.path) if item.whole else item.text
            blocks.append(f"{item.path}\n```\n{text}\n```")
        return "\n\n".join(blocks)
