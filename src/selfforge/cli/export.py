"""Training data from the journal: accepted edits as chat SFT examples, accepted
versus rejected edits for the same task as DPO preference pairs, and an exploring
proposer's trajectories as multi-turn traces.

Only ``propose`` calls are exported. An attempt's last propose call is the one that
produced its final candidate (earlier ones are the rounds its repairs replaced); an
attempt of the exploring proposer has no such call (its last says DONE), so it is
exported only as a trace. Prompts and replies are exported as the journal stores them,
which is with secrets masked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from selfforge.journal.store import AttemptRecord, Journal
from selfforge.judge.outcome import Outcome
from selfforge.propose import trajectory
from selfforge.propose.trajectory import Step
from selfforge.roles.caller import PERSONAS, render
from selfforge.run.planner import Backlog

FORMATS = ("sft", "dpo", "traces")


@dataclass
class Proposal:
    """The propose call that produced an attempt's final candidate."""

    attempt: AttemptRecord
    prompt: str
    reply: str
    system: str | None = None  # as journaled with the call (None in older journals)


@dataclass
class SftRecord:
    system: str
    proposal: Proposal

    def to_json(self) -> dict[str, Any]:
        a = self.proposal.attempt
        return {
            "messages": [
                {"role": "system", "content": self.system},
                {"role": "user", "content": self.proposal.prompt},
                {"role": "assistant", "content": self.proposal.reply},
            ],
            "metadata": {
                "attempt_id": a.id,
                "run_id": a.run_id,
                "task": a.task,
                "commit": a.commit,
                "landed": a.landed,
                "branch": a.branch,
            },
        }


@dataclass
class DpoRecord:
    """A preference pair. The prompt is the rejected attempt's: that is where the model
    went wrong, and the accepted reply answers the same task. A reply from a repair
    round edits its attempt's candidate rather than the base, so the metadata carries
    both attempts' repairs and base commits for consumers who want only exact pairs."""

    system: str
    task_id: int | None
    chosen: Proposal
    rejected: Proposal

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": [
                {"role": "system", "content": self.system},
                {"role": "user", "content": self.rejected.prompt},
            ],
            "chosen": [{"role": "assistant", "content": self.chosen.reply}],
            "rejected": [{"role": "assistant", "content": self.rejected.reply}],
            "metadata": {
                "task_id": self.task_id,
                "task": self.chosen.attempt.task,
                "rejected_task": self.rejected.attempt.task,
                "chosen_attempt_id": self.chosen.attempt.id,
                "rejected_attempt_id": self.rejected.attempt.id,
                "rejected_reason": self.rejected.attempt.reason,
                "commit": self.chosen.attempt.commit,
                "chosen_repairs": self.chosen.attempt.repairs,
                "rejected_repairs": self.rejected.attempt.repairs,
                "chosen_base_commit": self.chosen.attempt.base_commit,
                "rejected_base_commit": self.rejected.attempt.base_commit,
            },
        }


@dataclass
class TraceRecord:
    """One attempt of the exploring proposer as a chat: what it was given, then each
    action (assistant) and what it saw next (user), the judge's rejections included;
    its outcome in the metadata, for consumers who keep only the accepted ones."""

    attempt: AttemptRecord
    system: str
    steps: list[Step]

    def to_json(self) -> dict[str, Any]:
        messages = [{"role": "system", "content": self.system}]
        for step in self.steps:
            if step.action is not None:
                messages.append({"role": "assistant", "content": step.action})
            if step.kind in ("task", "feedback", "bash", "edit", "invalid", "agent"):
                messages.append({"role": "user", "content": step.output})
        while messages[-1]["role"] == "user" and len(messages) > 2:
            messages.pop()  # what the model saw after its last action taught it nothing
        a = self.attempt
        return {
            "messages": messages,
            "metadata": {
                "attempt_id": a.id,
                "run_id": a.run_id,
                "task": a.task,
                "outcome": a.outcome,
                "reason": a.reason,
                "landed": a.landed and a.reverted_by is None,
                "commit": a.commit,
                "steps": sum(1 for s in self.steps if s.kind in trajectory.ACTIONS),
                "input_tokens": sum(s.input_tokens for s in self.steps),
                "output_tokens": sum(s.output_tokens for s in self.steps),
            },
        }


def trace_records(journal: Journal) -> list[TraceRecord]:
    """One record per attempt with a trajectory, oldest first, whatever its outcome."""
    records = []
    for attempt_id in trajectory.explored(journal):
        attempt = journal.attempt(attempt_id)
        proposes = [c for c in journal.calls(attempt_id) if c["role"] == "propose"]
        system = _system_of(proposes[0]) if proposes else None
        if attempt is not None:
            records.append(
                TraceRecord(attempt, system or "", trajectory.steps(journal, attempt_id))
            )
    return records


def system_prompt() -> str:
    """The system message of a propose call, for journals older than the one that keeps
    every message: rendered from the installed template, as the caller does."""
    return render("system", persona=PERSONAS["propose"])


def final_proposal(journal: Journal, attempt: AttemptRecord) -> Proposal | None:
    proposes = [c for c in journal.calls(attempt.id) if c["role"] == "propose"]
    if not proposes or proposes[-1]["response"] is None:
        return None  # no reply, or the last call failed: there is no final candidate
    if trajectory.has_steps(journal, attempt.id):
        return None  # an exploring proposer's: a trace, not one reply with edits
    call = proposes[-1]
    return Proposal(attempt, call["prompt"] or "", call["response"], _system_of(call))


def _system_of(call: dict[str, Any]) -> str | None:
    """The system message the model saw, from the call's journaled messages."""
    try:
        messages = json.loads(call.get("messages") or "[]")
    except ValueError:
        return None
    return next((m["content"] for m in messages if m.get("role") == "system"), None)


def sft_records(journal: Journal) -> list[SftRecord]:
    """One record per accepted attempt, oldest first."""
    system = system_prompt()
    records = []
    for attempt in journal.attempts():
        if _kept(attempt) and (found := final_proposal(journal, attempt)):
            records.append(SftRecord(found.system or system, found))
    return records


def dpo_records(journal: Journal) -> list[DpoRecord]:
    """One pair per rejected attempt whose task was later (or earlier) accepted.

    Each rejected attempt is paired with the nearest accepted attempt after it for the
    same task, else the latest before it. Pairs whose replies are identical say nothing
    about preference and are left out.
    """
    system = system_prompt()
    # An undone acceptance is no example of a good reply.
    attempts = [a for a in journal.attempts() if _kept(a) or a.outcome == Outcome.REJECTED]
    groups = TaskGroups.from_journal(journal)
    proposals = {a.id: p for a in attempts if (p := final_proposal(journal, a))}
    records = []
    for rejected in (p for p in proposals.values() if p.attempt.outcome == Outcome.REJECTED):
        key = groups.key(rejected.attempt.task)
        accepted = [
            p
            for p in proposals.values()
            if p.attempt.outcome == Outcome.ACCEPTED and groups.key(p.attempt.task) == key
        ]
        chosen = _nearest(rejected, accepted)
        if chosen is not None and chosen.reply.strip() != rejected.reply.strip():
            records.append(
                DpoRecord(rejected.system or system, groups.task_id(key), chosen, rejected)
            )
    return records


def _nearest(rejected: Proposal, accepted: list[Proposal]) -> Proposal | None:
    later = [p for p in accepted if p.attempt.id > rejected.attempt.id]
    if later:
        return min(later, key=lambda p: p.attempt.id)
    return max(accepted, key=lambda p: p.attempt.id, default=None)


class TaskGroups:
    """Task texts that name the same backlog task.

    Attempts store their task's text, not its id, and the diagnoser may rewrite a task's
    text between attempts. Each journaled ``diagnose`` call links the text it was asked
    about (its attempt's task) to the text it returned, which became the task's new text;
    the linked texts form one group, and the ``tasks`` row holding a group's latest text
    gives its id.
    """

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.ids: dict[str, int] = {}

    @classmethod
    def from_journal(cls, journal: Journal) -> TaskGroups:
        groups = cls()
        for attempt in journal.attempts():
            for call in journal.calls(attempt.id):
                new_text = (call["response"] or "").strip()
                if call["role"] == "diagnose" and new_text:
                    groups.link(attempt.task, new_text)
        for task in Backlog(journal).all_tasks():
            root = groups.key(task.text)
            groups.ids[root] = min(groups.ids.get(root, task.id), task.id)
        return groups

    def key(self, text: str) -> str:
        self.parent.setdefault(text, text)
        while self.parent[text] != text:
            self.parent[text] = self.parent[self.parent[text]]
            text = self.parent[text]
        return text

    def link(self, a: str, b: str) -> None:
        root_a, root_b = self.key(a), self.key(b)
        if root_a != root_b:
            self.parent[root_b] = root_a

    def task_id(self, key: str) -> int | None:
        return self.ids.get(self.key(key))


def records(journal: Journal, fmt: str) -> list[SftRecord] | list[DpoRecord] | list[TraceRecord]:
    if fmt == "sft":
        return sft_records(journal)
    if fmt == "dpo":
        return dpo_records(journal)
    if fmt == "traces":
        return trace_records(journal)
    raise ValueError(f"unknown export format {fmt!r}; formats are {FORMATS}")


def write_jsonl(items: Iterable[SftRecord | DpoRecord | TraceRecord], stream: IO[str]) -> int:
    """Write one JSON object per line; returns how many."""
    count = 0
    for item in items:
        stream.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
        count += 1
    return count


def _kept(attempt: AttemptRecord) -> bool:
    """Accepted, and not undone since."""
    return attempt.outcome == Outcome.ACCEPTED and attempt.reverted_by is None
