"""The message of a commit selfforge lands: what a reviewer of the history wants.

    calc.py: fix add() so that test_add passes          ← subject: what changed

    Task: Fix add() in calc.py so that test_add passes

    Accepted because:
    - tests: 3 of 3 pass (before: 2 of 3); now passing: test_calc.py::test_add
    - no regression: every test that passed before still passes; 3 collected (before: 3)
    - lint: 0 findings (before: 0)
    - review: 1 of 1 approved (quorum 1): looks right

    Selfforge-Attempt: 42                               ← trailers (git interpret-trailers)
    Selfforge-Run: 7
    Selfforge-Model: gemini:gemini-2.5-flash
    Selfforge-Cost: $0.0123

``commit_message`` is pure: it takes the facts, it returns the text. ``gather`` collects
those facts from what an attempt has at hand (the journal, the baseline, the candidate);
``landing_message`` does both for an attempt about to land. ``restate`` gives a commit
that was made before it was checked its final message: same tree, same parents, so what
lands is exactly what was checked. The trailers are how ``selfforge undo`` finds a change
however it reached the branch.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from selfforge.journal.store import Journal
    from selfforge.judge.verdict import Observed

SUBJECT_WIDTH = 72
TRAILER_ATTEMPT = "Selfforge-Attempt"
TRAILER_RUN = "Selfforge-Run"


@dataclass(frozen=True)
class Vote:
    approve: bool
    reason: str
    focus: str = ""


@dataclass
class Evidence:
    """Why the change was accepted: what the checks and reviewers observed."""

    tests_passed: int | None = None  # on the candidate; None: no test command
    tests_collected: int | None = None
    baseline_passed: int | None = None
    baseline_collected: int | None = None
    fixed: list[str] = field(default_factory=list)  # failed before, pass now
    new_tests: list[str] = field(default_factory=list)
    lint_findings: int | None = None  # None: no lint command
    baseline_lint: int | None = None
    votes: list[Vote] = field(default_factory=list)
    quorum: int | None = None
    repairs: int = 0


def commit_message(
    *,
    task: str,
    attempt_id: int,
    run_id: int,
    model: str,
    cost_usd: float | None,
    changed: list[str],
    evidence: Evidence,
) -> str:
    """Subject, body (task and why it was accepted), trailers."""
    paragraphs = [subject(task, changed), _wrap("Task: " + task.strip())]
    reasons = accepted_because(evidence)
    if reasons:
        paragraphs.append("Accepted because:\n" + "\n".join(_bullet(r) for r in reasons))
    if len(changed) > 1:
        paragraphs.append(_wrap("Files: " + ", ".join(changed)))
    cost = f"${cost_usd:.4f}" if cost_usd is not None else "unknown"
    paragraphs.append(
        f"{TRAILER_ATTEMPT}: {attempt_id}\n{TRAILER_RUN}: {run_id}\n"
        f"Selfforge-Model: {_one_line(model)}\nSelfforge-Cost: {cost}"
    )
    return "\n\n".join(paragraphs) + "\n"


def subject(task: str, changed: list[str]) -> str:
    """The task's first line as a subject, prefixed by where the change is when the task
    does not already say it; at most 72 characters, cut at a word."""
    text = _one_line(next((ln for ln in task.splitlines() if ln.strip()), "")).rstrip(".")
    text = re.sub(r"^(task|goal)\s*:\s*", "", text, flags=re.I) or "change"
    area = _area(changed)
    if area and area not in text and PurePosixPath(area).stem not in text:
        text = f"{area}: {text[0].lower()}{text[1:]}" if text[1:2].islower() else f"{area}: {text}"
    if len(text) <= SUBJECT_WIDTH:
        return text
    cut = text[: SUBJECT_WIDTH - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def accepted_because(e: Evidence) -> list[str]:
    lines = []
    if e.tests_passed is not None and e.tests_collected is not None:
        line = f"tests: {e.tests_passed} of {e.tests_collected} pass"
        if e.baseline_passed is not None:
            line += f" (before: {e.baseline_passed} of {e.baseline_collected})"
        if e.fixed:
            line += "; now passing: " + ", ".join(e.fixed[:10])
            line += f" and {len(e.fixed) - 10} more" if len(e.fixed) > 10 else ""
        lines.append(line)
        regress = "no regression: every test that passed before still passes"
        if e.baseline_collected is not None:
            regress += f"; {e.tests_collected} collected (before: {e.baseline_collected})"
        lines.append(regress)
    if e.new_tests:
        lines.append("new tests pass on their own: " + ", ".join(e.new_tests))
    if e.lint_findings is not None:
        before = f" (before: {e.baseline_lint})" if e.baseline_lint is not None else ""
        lines.append(f"lint: {e.lint_findings} finding(s){before}")
    if e.votes:
        approved = sum(v.approve for v in e.votes)
        quorum = f" (quorum {e.quorum})" if e.quorum else ""
        said = "; ".join(
            (f"{v.focus}: " if v.focus else "") + _one_line(v.reason) for v in e.votes if v.reason
        )
        lines.append(f"review: {approved} of {len(e.votes)} approved{quorum}: {said}".rstrip(": "))
    if e.repairs:
        lines.append(f"passed after {e.repairs} repair round(s)")
    return lines


def gather(
    journal: Journal,
    attempt_id: int,
    baseline: Observed | None,
    observed: Observed | None,
    repairs: int = 0,
    quorum: int | None = None,
) -> tuple[Evidence, float | None]:
    """The evidence and the attempt's model cost so far, from what an attempt holds."""
    from selfforge.roles.caller import parse_vote

    evidence = Evidence(repairs=repairs, quorum=quorum)
    before = baseline.tests if baseline else None
    after = observed.tests if observed else None
    if after is not None:
        evidence.tests_passed, evidence.tests_collected = len(after.passed), after.collected
    if before is not None:
        evidence.baseline_passed, evidence.baseline_collected = len(before.passed), before.collected
        if after is not None:
            evidence.fixed = sorted(after.passed - before.passed)
    if observed is not None and observed.lint is not None:
        evidence.lint_findings = len(observed.lint)
        if baseline is not None and baseline.lint is not None:
            evidence.baseline_lint = len(baseline.lint)
    calls = journal.calls(attempt_id)
    for call in calls:
        if call["role"] == "review" and call["response"]:
            vote = parse_vote(call["response"])
            evidence.votes.append(Vote(vote.approve, vote.reason, _focus(call["prompt"] or "")))
    costs = [c["cost_usd"] for c in calls if c["cost_usd"] is not None]
    return evidence, (sum(costs) if costs else (0.0 if calls else None))


def landing_message(
    engine: Any,
    attempt_id: int,
    task: str,
    baseline: Observed | None,
    observed: Observed | None,
    changed: Iterable[str],
    repairs: int = 0,
) -> str:
    """The message for an attempt that passed every gate. ``engine`` is the run's
    ``attempt.Engine`` (its journal, run id, directives and model are read)."""
    directives = engine.d
    reviewing = directives.role_enabled("review")
    quorum = min(directives.roles.quorum, len(directives.roles.reviewers or [""]))
    evidence, cost = gather(
        engine.journal, attempt_id, baseline, observed, repairs, quorum if reviewing else None
    )
    return commit_message(
        task=task,
        attempt_id=attempt_id,
        run_id=engine.run_id,
        model=getattr(engine.caller.model, "spec", "unknown"),
        cost_usd=cost,
        changed=sorted(changed),
        evidence=evidence,
    )


def restate(cwd: Path, commit: str, message: str) -> str:
    """``commit`` with ``message`` instead: same tree, parents and author; a new sha."""
    from selfforge.repo import git

    fields = git.git("show", "-s", "--format=%T%n%P%n%an%n%ae%n%ad", "--date=raw", commit, cwd=cwd)
    tree, parents, name, email, date = fields.splitlines()[:5]
    env = {
        **git.identity_env(cwd),
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": date,
    }
    args = [arg for parent in parents.split() for arg in ("-p", parent)]
    made = git.git("commit-tree", tree, *args, cwd=cwd, input_text=message, env=env).strip()
    return git.remember_tree(made, tree)


def _focus(prompt: str) -> str:
    """The reviewer persona, as prompts/review.j2 names it."""
    m = re.search(r"your focus \(([^)\n]{1,40})\)", prompt) or re.search(
        r"as (?:an? )?([\w-]{1,40}) reviewer", prompt
    )
    return m[1].strip() if m else ""


def _area(changed: list[str]) -> str:
    if not changed:
        return ""
    if len(changed) == 1:
        return changed[0]
    parents = {PurePosixPath(p).parts[0] for p in changed if len(PurePosixPath(p).parts) > 1}
    if len(parents) == 1 and all("/" in p for p in changed):
        return parents.pop()
    return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _wrap(text: str) -> str:
    return textwrap.fill(text, 72, break_long_words=False, break_on_hyphens=False)


def _bullet(text: str) -> str:
    return textwrap.fill(
        text, 72, initial_indent="- ", subsequent_indent="  ", break_long_words=False
    )
