"""``selfforge check``: the judge on a change made anywhere — a commit, a range, a branch,
a patch — with the same pipeline, sandbox and directives as ``run``, and no model.

The change becomes one candidate commit on top of its base (a range is judged as the one
change from its base to its tip); the baseline is measured on the base (or reused from
the cache); the stages run as for a proposal of the loop, minus the critic and the
reviewers unless a model is given with ``review``. The check is journaled as an attempt
of a run of its own, so ``log``, ``show`` and the dashboard list it. Landing, when asked,
is the same fast-forward as ``run``'s: the user's own commits are landed as they are,
never rewritten; a patch lands as one commit.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from selfforge.config import LoadedDirectives
from selfforge.errors import SelfforgeError, UsageError
from selfforge.journal.store import Journal
from selfforge.judge.new_tests import AddedTestsProver
from selfforge.judge.stages import Candidate, run_pipeline
from selfforge.judge.verdict import Judgement, Outcome
from selfforge.measure.gate import measure_change
from selfforge.measure.history import keep
from selfforge.measure.sample import Comparison
from selfforge.measure.stats import WORSE
from selfforge.models import Model
from selfforge.models.base import ModelError, Reply, Request
from selfforge.repo import git
from selfforge.repo.workspace import Workspace, require_commit
from selfforge.run.attempt import Attempt, AttemptResult
from selfforge.run.baselines import baseline_and_candidate, provide_setup
from selfforge.run.engine import Engine, make_engine
from selfforge.run.recovery import recover
from selfforge.ui.reporters import Reporter


class CannotJudge(SelfforgeError):
    """The change cannot be judged as given (exit 2): the reason and the fix."""

    exit_code = 2


@dataclass
class Change:
    """What to judge: ``tip`` on top of ``base``; ``land_tip`` is what a landing moves the
    user's branch to (None: nothing can land)."""

    base: str
    tip: str
    label: str
    land_tip: str | None = None


@dataclass
class CheckResult:
    """What ``check`` answers, derived from the judge's ``Judgement`` (judge/verdict.py):
    the outcome (accepted, rejected or needs review: could not judge is raised as
    ``CannotJudge``) and its exit code, the steps the judge journaled."""

    outcome: Outcome
    reason: str
    attempt_id: int
    run_id: int
    change: Change
    changed: dict[str, str] = field(default_factory=dict)
    steps: list[dict[str, object]] = field(default_factory=list)
    landed: bool = False
    branch: str | None = None
    commit: str | None = None
    review: list[str] = field(default_factory=list)  # what a person must look at
    # the declared measures on base and candidate (measure/gate.py): their JSON, and a
    # line each for people
    measures: list[dict[str, object]] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)
    coverage: dict[str, object] | None = None  # the changed lines the tests ran (--json)

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.ACCEPTED

    @property
    def verdict(self) -> Outcome:
        """accepted | rejected | needs_review (every gate passed; a person decides)."""
        return self.outcome

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.outcome.value,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "review": self.review,
            "attempt_id": self.attempt_id,
            "run_id": self.run_id,
            "change": self.change.label,
            "base": self.change.base,
            "tip": self.change.tip,
            "changed": self.changed,
            "steps": self.steps,
            "landed": self.landed,
            "branch": self.branch,
            "commit": self.commit,
            "measures": self.measures,
            "coverage": self.coverage,
        }


class NoModel:
    """The model of a check without ``--review``: never called (no stage asks one)."""

    spec = "none"

    def complete(self, request: Request) -> Reply:
        raise ModelError("selfforge check asks no model unless --review and --model are given")


def resolve_rev(root: Path, rev: str) -> Change:
    """``A..B`` (from their merge base), a branch other than the current one (from its
    merge base with HEAD), or a commit (from its first parent)."""
    if ".." in rev:
        left, _, right = rev.partition("..")
        left, right = _commit(root, left or "HEAD"), _commit(root, right or "HEAD")
        base = git.git("merge-base", left, right, cwd=root, check=False).strip()
        if not base:
            raise CannotJudge(f"{rev}: the two sides share no history; give a range that does")
        return Change(base, right, rev, land_tip=right)
    tip = _commit(root, rev)
    current = git.current_branch(root)
    if git.ok("show-ref", "--verify", "-q", f"refs/heads/{rev}", cwd=root) and rev != current:
        base = git.git("merge-base", "HEAD", tip, cwd=root).strip()
        return Change(base, tip, rev, land_tip=tip)
    parent = git.git("rev-parse", "-q", "--verify", f"{tip}^", cwd=root, check=False).strip()
    if not parent:
        raise CannotJudge(f"{rev} is a root commit: there is no base to judge it against")
    return Change(parent, tip, rev, land_tip=tip)


def _commit(root: Path, rev: str) -> str:
    sha = git.git("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", cwd=root, check=False)
    if not sha.strip():
        raise CannotJudge(f"no commit named {rev!r} here; give a commit, branch or A..B range")
    return sha.strip()


def check(
    ws: Workspace,
    loaded: LoadedDirectives,
    reporter: Reporter,
    *,
    rev: str | None = None,
    patch: str | None = None,
    task: str | None = None,
    land: bool = False,
    model: Model | None = None,
    no_sandbox: bool = False,
    changes: list[str] | None = None,
) -> CheckResult:
    """Judge one change; journal it as an attempt; land it when asked and accepted.
    ``changes``: tests the change is meant to change (with those its commits name in a
    ``Selfforge-Changes:`` trailer): their base versions may fail; a person reviews."""
    d = loaded.directives
    roles = ["propose"] + (["critique", "review"] if model is not None else [])
    d.roles.enabled = [r for r in d.roles.enabled if r in roles] or ["propose"]
    if model is not None and not any(r in d.roles.enabled for r in ("critique", "review")):
        d.roles.enabled = roles
    with ws.locked("selfforge check"), Journal(ws.state / "journal.db") as journal:
        recovered = recover(ws, journal)
        if recovered:
            reporter.info(recovered)
        head = require_commit(ws.root)
        change = resolve_rev(ws.root, rev or "HEAD") if patch is None else Change(head, "", "-")
        if note := directives_used(ws.root, loaded, change.base):
            reporter.info(note)
        the_model = model or NoModel()
        run_id = journal.start_run(
            pid=os.getpid(),
            base_branch=git.current_branch(ws.root),
            base_commit=change.base,
            model=the_model.spec,
            goals=[f"check {change.label}"],
            land_mode="merge" if land else "branch",
        )
        engine = make_engine(
            ws, loaded, journal, the_model, reporter, run_id, no_sandbox=no_sandbox
        )
        status, why = "failed", "stopped by an unexpected error"
        try:
            result = _judge(engine, change, patch, task, land, head, changes or [])
            status, why = "finished", result.reason
            return result
        except SelfforgeError as exc:
            why = exc.message
            raise
        finally:
            ws.remove_worktrees()
            journal.end_run(run_id, status, why, left_open=Outcome.ERROR)


def directives_used(root: Path, loaded: LoadedDirectives, base: str) -> str | None:
    """Which directives judge the change, when the base's are not the same file: always
    the working tree's (the user's, whoever made the change), also when the base predates
    them or they are not committed yet; None when the base holds them as they are."""
    if loaded.path is None:
        return None
    name = loaded.path.relative_to(root).as_posix()
    at_base = git.call("show", f"{base}:{name}", cwd=root)
    if at_base.returncode != 0 or not _table(at_base.stdout, name):
        why = f"the base {base[:10]} predates it"
    elif _table(at_base.stdout, name) != _table(loaded.text, name):
        why = f"the base {base[:10]} has another version"
    else:
        return None
    return f"directives: {name} from the working tree ({why})"


def _table(text: str, name: str) -> object:
    """The directives ``text`` holds: the whole file, or pyproject.toml's
    [tool.selfforge] table (the rest of that file changes with no bearing on them)."""
    if name != "pyproject.toml":
        return text
    try:
        return tomllib.loads(text).get("tool", {}).get("selfforge")
    except tomllib.TOMLDecodeError:
        return None


def _judge(
    e: Engine,
    change: Change,
    patch: str | None,
    task: str | None,
    land: bool,
    head: str,
    changes: list[str],
) -> CheckResult:
    if e.d.checks.setup:  # the base's manifests, installed once, seen read-only
        provide_setup(e, change.base)
    baseline, (wt, commit, changed), ahead = baseline_and_candidate(
        e, change.base, lambda: _candidate_commit(e, change, patch)
    )
    label = task or _subject(e.ws.root, change) or f"check {change.label}"
    attempt = Attempt(e, 1, label, change.base, baseline, slot="check")
    attempt.wt = wt  # the attempt's worktree: checked out above, as Attempt.open would
    if not changed:
        result = attempt.result(Outcome.REJECTED, f"{change.label} changes nothing")
        attempt.finish(result)
        return _result(result, e, change, changed)
    candidate = Candidate(
        attempt_id=attempt.id,
        round=0,
        task=label,
        base=change.base,
        commit=commit,
        tree=attempt.wt,
        changed=changed,
        diff=git.diff(attempt.wt, change.base, commit),
        criterion=attempt.criterion,
        declared=tuple([*changes, *declared_in(e.ws.root, change)]),
        ahead=ahead,
    )
    attempt.candidate = candidate
    judgement = run_pipeline(candidate, replace(attempt.judge(), person=True))
    attempt.observed = candidate.observed
    if judgement.outcome is Outcome.COULD_NOT_JUDGE:
        attempt.finish(attempt.result(judgement.outcome.journaled, judgement.reason))
        raise CannotJudge(f"{judgement.reason}; {change.label} does not make it build either")
    measured: list[Comparison] = []
    if e.d.measures and judgement.outcome is not Outcome.REJECTED:
        prover = AddedTestsProver(candidate, attempt.judge())  # coverage's credit
        judgement, measured = _measure(e, change.base, commit, judgement, prover)
        keep(
            e.journal,
            "check",
            change.base,
            commit,
            measured,
            run_id=e.run_id,
            attempt_id=attempt.id,
        )
    if judgement.ok and land:
        result = _land(e, attempt, change, patch is not None, head, commit)
    else:
        kept = commit if judgement.ok else None
        result = attempt.result(judgement.outcome, judgement.reason, commit=kept)
    attempt.finish(result)
    return _result(result, e, change, changed, judgement, measured)


def _measure(
    e: Engine, base: str, commit: str, judgement: Judgement, prover: AddedTestsProver
) -> tuple[Judgement, list[Comparison]]:
    """The declared measures on the base and the candidate, after every other gate (no
    test run shares the cores with them), each change a step of the check."""
    judgement, found, failed = measure_change(e.ws, e.d, e.space, base, commit, judgement, prover)
    for c in found:
        e.reporter.step(f"measure {c.name}", c.verdict != WORSE, c.describe())
    for line in failed:
        e.reporter.step("measure", False, line)
    return judgement, found


def _candidate_commit(
    e: Engine, change: Change, patch: str | None
) -> tuple[Path, str, dict[str, str]]:
    """The change as one commit on its base, checked out in the check's worktree: the
    worktree, the commit, what it changes."""
    wt = e.ws.create_worktree("check", change.base)
    tip = _apply_patch(wt, patch, change) if patch is not None else change.tip
    commit = git.git(
        "commit-tree",
        f"{tip}^{{tree}}",
        "-p",
        change.base,
        "-m",
        f"check {change.label}",
        cwd=wt,
        env=git.identity_env(wt),  # a machine with no git identity can be judged
    ).strip()
    git.git("checkout", "-q", "-f", "--detach", commit, cwd=wt)
    return wt, commit, git.name_status(wt, change.base, commit)


def _apply_patch(wt: Path, patch: str, change: Change) -> str:
    if not patch.strip():
        raise CannotJudge("the patch is empty: pipe a diff (git diff | selfforge check -)")
    diffs = _diffs_of(patch)
    detail = _apply_any_prefix(wt, diffs)
    if detail is not None and _already_applied(wt, diffs):
        raise CannotJudge(
            "the patch does not apply to HEAD: HEAD already holds it; check the commit "
            "that made it instead (selfforge check HEAD, or a range BASE..HEAD)"
        )
    if detail is not None:
        raise CannotJudge(
            f"the patch does not apply to HEAD ({detail}); make it against HEAD "
            "(git diff HEAD) or commit it and check the commit"
        )
    tip = git.commit_index(wt, change.base, "selfforge check: patch")
    change.tip = change.land_tip = tip
    return tip


def _apply_any_prefix(wt: Path, patch: str) -> str | None:
    """Stage ``patch`` in ``wt``; None when it applied, else git's first complaint. Paths
    with a/ b/ prefixes (git diff, format-patch, diff -ru old/ new/) first, then without
    (diff -u file.orig file, git diff --no-prefix). A failed git apply changes nothing,
    so the second try starts from the same tree."""
    details = []
    for strip in ("-p1",) if _has_git_prefixes(patch) else ("-p1", "-p0"):
        proc = git.call(
            "apply", "--index", "--whitespace=nowarn", strip, "-", cwd=wt, input_text=patch
        )
        if proc.returncode == 0:
            return None
        details.append((proc.stderr.strip().splitlines() or ["it does not apply"])[0])
    if len(details) == 1:
        return details[0]
    # the first unless it could not even find the file names (a patch without prefixes)
    return details[1] if "filename" in details[0] or "No such file" in details[0] else details[0]


def _already_applied(wt: Path, patch: str) -> bool:
    """Does ``patch`` apply in reverse to HEAD (the change is in HEAD already: a CI job's
    ``git diff HEAD~1`` piped after the commit, a format-patch of HEAD)?"""
    for strip in ("-p1",) if _has_git_prefixes(patch) else ("-p1", "-p0"):
        proc = git.call("apply", "--check", "-R", strip, "-", cwd=wt, input_text=patch)
        if proc.returncode == 0:
            return True
    return False


# The file names of a diff: git's header and the unified diff's ---/+++ lines.
_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)", re.M)
_FILE_LINES = re.compile(r"^--- (\S+).*\n\+\+\+ (\S+)", re.M)


def _has_git_prefixes(patch: str) -> bool:
    """Does every file name of ``patch`` carry git's a/ b/ prefix (git diff, format-patch)?
    Such a patch applies at -p1 or not at all: at -p0 a new file's ``b/name`` would be
    created as a folder ``b/`` (a patch already in HEAD would be judged as new files)."""
    names = [n for pair in _GIT_HEADER.findall(patch) for n in pair]
    names += [n for pair in _FILE_LINES.findall(patch) for n in pair if n != "/dev/null"]
    return bool(names) and all(n.startswith(("a/", "b/")) for n in names)


# A message of `git format-patch` (mbox): its first line, and the line that ends the
# commit message (what follows is the diff, git am's split).
_MBOX_FROM = re.compile(r"^From [0-9a-f]{40,64} Mon Sep 17 00:00:00 2001$", re.M)
_MESSAGE_END = re.compile(r"^---$", re.M)


def _diffs_of(patch: str) -> str:
    """The diffs of a patch; of an mbox from ``git format-patch``, without each message's
    headers and commit message (a message may quote diff lines git apply would read)."""
    starts = [m.start() for m in _MBOX_FROM.finditer(patch)]
    if not starts or patch[: starts[0]].strip():
        return patch
    diffs = []
    for start, end in zip(starts, [*starts[1:], len(patch)], strict=True):
        message = patch[start:end]
        split = _MESSAGE_END.search(message)
        diffs.append(message[split.end() + 1 :] if split else message)
    return "".join(diffs)


def _land(
    e: Engine, attempt: Attempt, change: Change, from_patch: bool, head: str, commit: str
) -> AttemptResult:
    if change.base != head or change.land_tip is None:
        raise CannotJudge(
            f"--land needs a change on top of your branch's HEAD; {change.label} starts at "
            f"{change.base[:10]}, HEAD is {head[:10]}"
        )
    if from_patch:
        return attempt.land()  # one new commit, its message saying why it passed
    landed = e.ws.land(commit=change.land_tip, base_commit=head, mode="merge", name=change.label)
    e.reporter.step("land", True, landed.message)
    return attempt.result(
        Outcome.ACCEPTED,
        "all gates passed; " + landed.message,
        commit=change.land_tip,
        branch=landed.branch,
        landed=landed.landed,
    )


def _subject(root: Path, change: Change) -> str:
    if not change.tip:
        return ""
    subjects = git.git("log", "--format=%s", f"{change.base}..{change.tip}", cwd=root).split("\n")
    return "; ".join(s for s in subjects if s.strip())[:300]


TRAILER_CHANGES = "Selfforge-Changes"


def declared_in(root: Path, change: Change) -> list[str]:
    """The tests a change's commits say they change on purpose: each
    ``Selfforge-Changes: tests/test_a.py::test_x, TestY`` trailer of their messages."""
    if not change.tip:
        return []
    out = git.git(
        "log",
        f"--format=%(trailers:key={TRAILER_CHANGES},valueonly,separator=%x2C)",
        f"{change.base}..{change.tip}",
        cwd=root,
    )
    return [name.strip() for name in out.replace("\n", ",").split(",") if name.strip()]


def _result(
    result: AttemptResult,
    e: Engine,
    change: Change,
    changed: dict[str, str],
    judgement: Judgement | None = None,
    measured: list[Comparison] | None = None,
) -> CheckResult:
    """The check's answer: the attempt's outcome, and the judgement's steps and review
    items (none when nothing was judged)."""
    checks = judgement.checks if judgement is not None else []
    steps: list[dict[str, object]] = [
        {"name": c.name, "passed": c.passed, "exit_code": c.exit_code} for c in checks
    ]
    needs_review = judgement is not None and judgement.needs_review
    return CheckResult(
        result.outcome,
        result.reason,
        result.attempt_id,
        e.run_id,
        change,
        changed,
        steps,
        landed=result.landed,
        branch=result.branch,
        commit=result.commit,
        review=list(judgement.review) if needs_review and judgement else [],
        measures=[c.to_json() for c in measured or []],
        measured=[c.describe() for c in measured or []],
        coverage=judgement.coverage.to_json() if judgement and judgement.coverage else None,
    )


__all__ = ["CannotJudge", "Change", "CheckResult", "UsageError", "check", "resolve_rev"]
