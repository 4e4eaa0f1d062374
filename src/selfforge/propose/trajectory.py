"""An exploring proposer's trajectory in the journal (table ``trajectory``): one row per
step, what the model answered and what it saw in return, with tokens and time.

Kinds: ``task`` (step 0: what the model was given), ``feedback`` (the judge's rejection
of the previous round's candidate, the first thing a repair round sees), ``bash``,
``edit``, ``invalid`` (a reply with no readable action: the reminder it got), ``done``,
``cannot`` and ``limit`` (the step, time or budget limit that ended the round). An
outside agent's (``external.py``): ``task`` or ``feedback``, then ``agent`` (an action of
its own trajectory and what it saw) or ``log`` (a part of its record that does not split
so), then ``transcript`` (its command line, output, exit code, tokens and cost).
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass

from selfforge.journal.store import Journal

_FENCED = re.compile(r"```[^\n]*\n(.*?)(?:```|$)", re.S)
ACTIONS = ("bash", "edit", "invalid", "done", "cannot", "agent")  # the rows a model reply made


@dataclass
class Step:
    round: int
    step: int
    kind: str
    action: str | None  # the model's reply (None for task, feedback and limit)
    output: str  # what the model saw next: the observation, bounded
    exit_code: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0

    def headline(self) -> str:
        """One line: the step, its kind, the command or the first line of the reply."""
        text = self.action or self.output
        if self.kind in ("bash", "agent") and (fenced := _FENCED.search(text)):
            text = fenced[1]  # the command, not the words before it
        what = text.strip().splitlines() or [""]
        shown = what[0][:100] if self.kind != "edit" else f"edits ({len(self.action or '')} chars)"
        code = f" → exit {self.exit_code}" if self.exit_code is not None else ""
        spent = f"  [{self.input_tokens}+{self.output_tokens} tok, {self.seconds:.1f}s]"
        return f"round {self.round} step {self.step:>2} {self.kind:<8} {shown}{code}{spent}"


_FIELDS = [f.name for f in dataclasses.fields(Step)]


def record(journal: Journal, run_id: int | None, attempt_id: int, step: Step) -> None:
    values = [getattr(step, name) for name in _FIELDS]
    journal.conn.execute(
        f"INSERT INTO trajectory (run_id, attempt_id, {', '.join(_FIELDS)}, created_at)"
        f" VALUES (?, ?, {', '.join('?' * len(_FIELDS))}, ?)",
        (run_id, attempt_id, *values, time.time()),
    )


def steps(journal: Journal, attempt_id: int) -> list[Step]:
    rows = journal.conn.execute(
        f"SELECT {', '.join(_FIELDS)} FROM trajectory WHERE attempt_id = ? ORDER BY id",
        (attempt_id,),
    )
    return [Step(*row) for row in rows]


def has_steps(journal: Journal, attempt_id: int) -> bool:
    row = journal.conn.execute(
        "SELECT 1 FROM trajectory WHERE attempt_id = ? LIMIT 1", (attempt_id,)
    ).fetchone()
    return row is not None


def explored(journal: Journal) -> list[int]:
    """The attempts that have a trajectory, oldest first."""
    rows = journal.conn.execute("SELECT DISTINCT attempt_id FROM trajectory ORDER BY attempt_id")
    return [int(r[0]) for r in rows]
