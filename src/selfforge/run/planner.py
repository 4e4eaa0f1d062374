"""The backlog: tasks planned from the goals, kept in the journal, attempted in order.

A task that keeps failing changes strategy instead of looping: after the first failure
it is retried with the lesson in its prompt, then diagnosed (a corrected instruction),
then retried in another edit format, and finally skipped with a journaled reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from selfforge.journal.store import AttemptRecord, Journal
from selfforge.roles.caller import Caller, parse_plan, render
from selfforge.roles.junk import task_junk


@dataclass
class Task:
    id: int
    text: str
    status: str
    priority: float
    attempts: int
    note: str | None = None
    edit_format: str | None = None  # set when the task is retried in another format
    source: str = "plan"  # plan, user, or split (a smaller step of a stalled task)


class Backlog:
    """Tasks in the journal's ``tasks`` table; lower priority number runs first."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def open_tasks(self) -> list[Task]:
        return self._select("WHERE status = 'open' ORDER BY priority, id")

    def all_tasks(self) -> list[Task]:
        return self._select("ORDER BY status = 'open' DESC, priority, id")

    def _select(self, where: str) -> list[Task]:
        rows = self.journal.conn.execute(
            "SELECT id, text, status, priority, attempts, note, edit_format, source "
            f"FROM tasks {where}"
        )
        return [Task(*row) for row in rows]

    def add(self, text: str, source: str = "plan", priority: float | None = None) -> Task:
        """A new open task, or the open task that already says the same (one row each)."""
        same = [t for t in self.open_tasks() if _norm(t.text) == _norm(text)]
        if same and source != "task":
            return same[0]
        if priority is None:
            row = self.journal.conn.execute("SELECT coalesce(max(priority), 0) FROM tasks")
            priority = float(row.fetchone()[0]) + 1
        now = time.time()
        cur = self.journal.conn.execute(
            "INSERT INTO tasks (text, priority, source, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (text, priority, source, now, now),
        )
        return Task(int(cur.lastrowid or 0), text, "open", priority, 0, source=source)

    def update(self, task_id: int, **fields: object) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        self.journal.conn.execute(
            f"UPDATE tasks SET {sets}, updated_at = ? WHERE id = ?",
            (*fields.values(), time.time(), task_id),
        )

    def get(self, task_id: int) -> Task | None:
        found = self._select(f"WHERE id = {int(task_id)}")
        return found[0] if found else None

    # --- edits by the user (`selfforge plan`); planning and the loop never call these ---

    def add_first(self, text: str, source: str = "user") -> Task:
        """A task that runs before every open one."""
        row = self.journal.conn.execute("SELECT min(priority) FROM tasks WHERE status = 'open'")
        lowest = row.fetchone()[0]
        return self.add(text, source, None if lowest is None else float(lowest) - 1)

    def drop(self, task_id: int, note: str = "dropped by the user") -> None:
        """Take a task off the backlog; the row stays, so its history does too."""
        self.update(task_id, status="dropped", note=note)

    def move(self, task_id: int, position: int) -> None:
        """Make an open task the ``position``-th (1 = next) of the open tasks.

        The open tasks are renumbered 1..n: midpoints between neighbours would drift
        into ties (broken by id) after a few moves; closed tasks keep their numbers.
        """
        others = [t.id for t in self.open_tasks() if t.id != task_id]
        index = min(max(position, 1), len(others) + 1) - 1
        order = [*others[:index], task_id, *others[index:]]
        with self.journal.transaction():
            for priority, tid in enumerate(order, start=1):
                self.update(tid, priority=float(priority))


class Planner:
    def __init__(
        self, backlog: Backlog, caller: Caller | None, goals: list[str], max_tasks: int = 3
    ) -> None:
        self.backlog, self.caller, self.goals = backlog, caller, goals
        self.max_tasks = max_tasks
        self.seen_this_run: set[str] = set()
        self.note = ""  # why the last plan gave nothing usable, for the run's stop reason
        self.fresh_only = False  # --goal: work only on tasks planned in this run
        self.created: set[int] = set()
        # measured goals: the profile of their measures on the current code (the hottest
        # functions, the lines no test runs), for the plan to choose its tasks from
        self.numbers: Callable[[], str] | None = None

    def next_task(self, state: str, history: list[str], repo_map: str = "") -> Task | None:
        """The first open task; plan new ones when none is open. None: nothing left."""
        tasks = self.backlog.open_tasks()
        if self.fresh_only:
            tasks = [t for t in tasks if t.id in self.created]
        if not tasks:
            tasks = self.plan(state, history, repo_map)
        if tasks:
            self.seen_this_run.add(_norm(tasks[0].text))
        return tasks[0] if tasks else None

    def plan(self, state: str, history: list[str], repo_map: str = "") -> list[Task]:
        if self.caller is None:  # planning disabled: the goals themselves are the tasks
            texts = list(self.goals)
        else:
            prompt = render(
                "plan",
                goals=self.goals,
                state=state,
                history=history[-10:],
                backlog=[t.text for t in self.backlog.open_tasks()],
                repo_map=repo_map,
                max_tasks=self.max_tasks,
                numbers=self.numbers() if self.numbers is not None else "",
            )
            reply = self.caller.ask("plan", prompt, hints={"goals": self.goals})
            texts = self.usable(parse_plan(reply.content, self.max_tasks))
            self.note = _plan_note(reply.content, texts)
        open_now = {_norm(t.text) for t in self.backlog.open_tasks()}
        fresh = [t for t in texts if _norm(t) not in self.seen_this_run | open_now]
        added = [self.backlog.add(text) for text in fresh]
        self.created.update(t.id for t in added)
        return added

    def usable(self, texts: list[str]) -> list[str]:
        """The tasks worth attempting; junk is journaled as a dropped task with its reason."""
        kept = []
        for text in texts:
            why = task_junk(text)
            if why is None:
                kept.append(text)
            else:
                task = self.backlog.add(text)
                self.backlog.update(task.id, status="dropped", note=f"junk from the planner: {why}")
        return kept


def split_task(planner: Planner, task: Task, reasons: list[str]) -> list[Task]:
    """Smaller steps for a stalled task, run next; a step is never split again."""
    if planner.caller is None or task.source == "split":
        return []
    prompt = render(
        "split",
        task=task.text,
        failures=task.attempts,
        reasons=reasons[-5:],
        goals=planner.goals,
        max_tasks=planner.max_tasks,
    )
    reply = planner.caller.ask("plan", prompt, hints={"goals": planner.goals})
    known = {_norm(t.text) for t in planner.backlog.all_tasks()} | planner.seen_this_run
    steps = [
        text
        for text in planner.usable(parse_plan(reply.content, planner.max_tasks))
        if _norm(text) not in known
    ]
    added = [planner.backlog.add_first(text, source="split") for text in reversed(steps)][::-1]
    planner.created.update(t.id for t in added)
    return added


def lesson_text(a: AttemptRecord) -> str:
    """A past attempt's lesson as the model should read it: an accepted change that was
    undone later, or never landed, is no success to copy."""
    from selfforge.judge.outcome import Outcome

    text = a.lesson if a.lesson else f"{a.task!r} was {a.outcome}: {a.reason}"
    if a.reverted_by:
        return f"(this change was accepted but later undone, by {a.reverted_by[:10]}) {text}"
    if a.outcome == Outcome.ACCEPTED and not a.landed:
        where = f"kept on branch {a.branch}" if a.branch else "never landed"
        return f"(accepted but {where}: not part of the code now) {text}"
    return text


def _plan_note(reply: str, tasks: list[str]) -> str:
    text = " ".join(reply.split())
    if tasks or text.upper().rstrip(".") == "DONE":
        return ""
    if not text:
        return "the planner's reply was empty"
    return f"the planner's reply listed no tasks it could use: {text[:160]!r}"


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")
