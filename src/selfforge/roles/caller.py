"""Model calls by role: render the role's template, check the budget, call, journal.

Replies are parsed here too (a plan into tasks, a review into a vote), so the loop deals
only in records. A reply that cannot be parsed is treated as the cautious answer and the
journal keeps the raw text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from selfforge.journal.lessons import recent_lessons
from selfforge.journal.store import Journal
from selfforge.models import Message, Model, ModelError, Reply, Request
from selfforge.models.base import ReplyTruncated
from selfforge.models.budget import Budget
from selfforge.models.secrets import mask
from selfforge.models.tokens import estimate_tokens
from selfforge.roles.junk import complete_edits_prefix, lesson_junk

if TYPE_CHECKING:
    from jinja2 import Environment, Template


@functools.cache
def _env() -> Environment:
    # jinja2 loaded on the first prompt: a `selfforge check` with no model role renders
    # none, and its import is a tenth of a warm Go check's start-up
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("selfforge", "prompts"),
        undefined=StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


PERSONAS = {
    "plan": "a pragmatic tech lead who splits goals into small, checkable tasks",
    "propose": "a careful senior engineer who makes minimal, correct edits",
    "critique": "a sharp critic who finds what a change gets wrong before its tests run",
    "review": "a code reviewer who approves only changes that are right",
    "reflect": "an engineer writing a one-line lesson for the next attempt",
    "diagnose": "a debugger who finds why attempts keep failing",
}


def render(template: str, **values: Any) -> str:
    return compiled(template).render(**values).strip() + "\n"


def compiled(template: str) -> Template:
    """A prompt template, compiled on first use (a resident selfforge compiles them all)."""
    return _env().get_template(f"{template}.j2")


def template_names() -> list[str]:
    return [name.removesuffix(".j2") for name in _env().list_templates(extensions=["j2"])]


@dataclass
class Caller:
    """Makes every model call of a run, journaled and within budget."""

    model: Model
    journal: Journal
    budget: Budget
    run_id: int | None = None
    answered: int = 0  # calls the model answered in this run (a quota after some is a stop)

    def ask(
        self,
        role: str,
        prompt: str,
        *,
        attempt_id: int | None = None,
        hints: dict[str, Any] | None = None,
        sections: dict[str, int] | None = None,
        system: str | None = None,
    ) -> Reply:
        """``system``: a system prompt of the caller's own (the exploring proposer's
        protocol) instead of the role's persona."""
        system = system or render("system", persona=PERSONAS.get(role, "an engineer"))
        request = Request(
            role=role,
            messages=[Message("system", system), Message("user", prompt)],
            hints=hints or {},
        )
        tokens = estimate_tokens(system + prompt)
        estimate = getattr(self.model, "estimate_cost", None)  # network models only
        self.budget.check(request, tokens, estimate(request, tokens) if estimate else None)
        started = time.monotonic()
        try:
            reply = self.model.complete(request)
        except ModelError as exc:
            self.journal.record_call(
                run_id=self.run_id,
                attempt_id=attempt_id,
                role=role,
                model=self.model.spec,
                prompt=mask(prompt),
                response=None,
                error=mask(exc.message),
                latency_s=time.monotonic() - started,
                sections=sections,
            )
            raise
        self.budget.record(reply)
        self.answered += 1
        kept, note, cut_error = self._screen(role, prompt, reply, request.max_output_tokens)
        usage = reply.usage
        messages = [
            {"role": "system", "content": mask(system)},
            {"role": "user", "content": mask(prompt)},
            {"role": "assistant", "content": mask(reply.content)},
        ]
        self.journal.record_call(
            run_id=self.run_id,
            attempt_id=attempt_id,
            role=role,
            model=reply.model or self.model.spec,
            prompt=mask(prompt),
            response=mask(reply.content),
            error=cut_error.message if cut_error else None,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens,
            thinking_tokens=usage.thinking_tokens,
            cost_usd=reply.cost_usd,
            latency_s=time.monotonic() - started,  # retries and waits included
            sections=sections,
            note=note,
            messages=messages,
        )
        if cut_error is not None:
            raise cut_error
        return dataclasses.replace(reply, content=kept) if kept != reply.content else reply

    def _screen(
        self, role: str, prompt: str, reply: Reply, cap: int | None
    ) -> tuple[str, str | None, ModelError | None]:
        """What of a reply the loop may use, the journal's note on it, and the error a
        reply cut before anything usable raises. A cut reply is never used as if whole."""
        content, limit = reply.content, f"the {cap}-token output limit" if cap else "its limit"
        if reply.truncated and role == "propose":
            prefix, complete = complete_edits_prefix(content)
            if not complete:
                return (
                    content,
                    f"cut at {limit}",
                    ReplyTruncated(
                        f"the model's reply was cut at {limit} before any edit was complete, so "
                        "nothing of it was applied; raise max_output_tokens in [model] (and the "
                        "server's context, e.g. llama.cpp -c 8192) or use a model that answers "
                        "more briefly"
                    ),
                )
            return prefix, f"cut at {limit}; kept the {complete} edit(s) complete before it", None
        if reply.truncated and role == "plan":
            return content.rsplit("\n", 1)[0], f"cut at {limit}; its last line dropped", None
        if reply.truncated and role in ("reflect", "diagnose"):
            return "", f"cut at {limit}; dropped", None
        if role == "reflect":
            why = lesson_junk(content, prompt, recent_lessons(self.journal))
            if why:
                return "", f"dropped: {why}", None
        return content, f"cut at {limit}" if reply.truncated else None, None


# --- parsing replies -------------------------------------------------------------------

_TASK_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(?P<task>.+?)\s*$")


def parse_plan(text: str, limit: int = 3) -> list[str]:
    """Tasks from a numbered or bulleted list; 'DONE' or nothing usable gives []."""
    if text.strip().upper().rstrip(".") == "DONE":
        return []
    tasks = []
    for line in text.splitlines():
        if m := _TASK_LINE.match(line):
            task = m["task"].strip().strip("*").strip()
            if task and task not in tasks:
                tasks.append(task)
    if not tasks and text.strip() and len(text.strip().splitlines()) == 1:
        tasks = [text.strip()]
    return tasks[:limit]


@dataclass
class Vote:
    approve: bool
    reason: str
    understood: bool = True


def parse_vote(text: str) -> Vote:
    """APPROVE: reason / REJECT: reason, on the first line that says either."""
    for line in text.splitlines():
        # Only separators after the verdict: a reason may itself start with "[" or "(".
        m = re.match(
            r"^\W*(APPROVE|APPROVED|LGTM|REJECT|REJECTED)\b[\s:;,.*\-—]*(.*)$", line.strip(), re.I
        )
        if m:
            approve = m[1].upper() in ("APPROVE", "APPROVED", "LGTM")
            return Vote(approve, m[2].strip() or ("approved" if approve else "rejected"))
    snippet = " ".join(text.split())[:120] or "an empty reply"
    return Vote(False, f"reviewer reply not understood ({snippet!r})", understood=False)


def has_concerns(text: str) -> bool:
    """A critique raises concerns unless it says it has none."""
    clean = text.strip().lower()
    if not clean:
        return False
    return not re.match(r"^\W*(no concerns|none|lgtm|looks good)\b", clean)
