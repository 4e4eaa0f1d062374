"""``selfforge undo``: revert the last landed change with a revert commit; and
``selfforge rollback``: the last known good tree (selfforge on itself) as a new commit.

The change is found by content, not by branch name, so it does not matter how it reached
the branch: the commit the journal recorded if it is an ancestor of HEAD (fast-forward,
or a merge of the ``selfforge/…`` branch), else the newest commit on HEAD whose message
carries its ``Selfforge-Attempt`` trailer (rebased, squashed or cherry-picked by hand),
else a commit on HEAD with the same patch (``git patch-id``; a message edited too).

The revert is made in a worktree first; if later commits touched the same lines it
conflicts there and undo refuses, naming them. Only a clean revert is fast-forwarded
onto the user's branch, by the same landing rules as any change.
"""

from __future__ import annotations

from pathlib import Path

from selfforge.errors import SelfforgeError, UsageError
from selfforge.journal.store import AttemptRecord, Journal
from selfforge.judge.outcome import Outcome
from selfforge.judge.selfcheck import last_good
from selfforge.repo import git
from selfforge.repo.workspace import Workspace
from selfforge.run.recovery import recover


def undo_last(ws: Workspace) -> str:
    with ws.locked("selfforge undo"), Journal(ws.state / "journal.db") as journal:
        recovered = recover(ws, journal)
        target, sha = _newest_on_head(ws.root, journal)
        _verify(ws.root, journal, target, sha)
        if not git.is_clean(ws.root):
            raise SelfforgeError(
                "your working tree has uncommitted changes; commit or stash "
                "them, then run `selfforge undo` again"
            )
        head = git.git("rev-parse", "HEAD", cwd=ws.root).strip()
        path = ws.create_worktree("undo", head)
        try:
            git.git("revert", "--no-edit", sha, cwd=path, check=False, env=git.identity_env(path))
            new_head = git.git("rev-parse", "HEAD", cwd=path).strip()
            if new_head == head:
                raise SelfforgeError(_conflict_message(ws, sha, head))
            result = ws.land(
                commit=new_head, base_commit=head, mode="merge", name=f"undo {target.task}"
            )
        finally:
            git.git("revert", "--abort", cwd=path, check=False)
            ws.remove_worktrees()
        journal.mark_reverted(target.id, new_head)
    done = f"reverted attempt {target.id} ({target.task}): {result.message}"
    return f"{recovered}\n{done}" if recovered else done


def _verify(root: Path, journal: Journal, attempt: AttemptRecord, sha: str) -> None:
    """The commit about to be reverted is the one selfforge recorded: the same tree when
    it is the landed commit itself, the same patch when it came back another way."""
    recorded = journal.attempt_extra(attempt.id).get("landed_tree")
    if sha == attempt.commit and recorded:
        if git.tree_of(root, sha) != recorded:
            raise SelfforgeError(
                f"commit {sha[:10]} does not hold the tree selfforge recorded for attempt "
                f"{attempt.id}; refusing to revert it (inspect .selfforge/journal.db)"
            )
        return
    if (
        sha != attempt.commit
        and attempt.diff
        and _same_patch(root, attempt.diff, [sha, "-1"]) != sha
    ):
        raise SelfforgeError(
            f"commit {sha[:10]} names attempt {attempt.id} but does not hold its change; "
            "refusing to revert it"
        )


def _newest_on_head(root: Path, journal: Journal) -> tuple[AttemptRecord, str]:
    """The newest accepted, not yet reverted attempt whose change is on HEAD, and the
    commit on HEAD that holds it."""
    candidates = [
        a
        for a in journal.attempts()
        if a.outcome == Outcome.ACCEPTED and a.commit and not a.reverted_by
    ]
    if not candidates:
        raise SelfforgeError("nothing to undo: no landed change that is not already reverted")
    for attempt in reversed(candidates):
        sha = find_on_head(root, attempt)
        if sha:
            return attempt, sha
    landed = [a for a in candidates if a.landed]
    if landed:
        raise UsageError(
            f"the change of attempt {landed[-1].id} ({(landed[-1].commit or '')[:10]}) is not on "
            "your current branch; check out the branch it landed on, then retry"
        )
    raise SelfforgeError(
        "nothing to undo: no change selfforge kept on a branch was merged into this one"
    )


def find_on_head(root: Path, attempt: AttemptRecord) -> str | None:
    """The commit on HEAD holding ``attempt``'s change: by sha, by trailer, by patch."""
    if attempt.commit and git.ok("merge-base", "--is-ancestor", attempt.commit, "HEAD", cwd=root):
        return attempt.commit
    since = [f"{attempt.base_commit}..HEAD"] if _is_ancestor(root, attempt.base_commit) else []
    found = git.git(
        "log",
        "--format=%H%x01%(trailers:key=Selfforge-Attempt,valueonly,separator=%x02)"
        "%x01%(trailers:key=Selfforge-Run,valueonly,separator=%x02)",
        "-i",
        f"--grep=^selfforge-attempt: *{attempt.id}$",
        "HEAD",
        *since,
        cwd=root,
    )
    for line in found.splitlines():
        sha, attempts, runs = [*line.split("\x01"), "", ""][:3]
        # The run trailer, when there is one, must match too: ids restart in a new journal.
        if str(attempt.id) in attempts.split("\x02") and (
            not runs.strip() or str(attempt.run_id) in runs.split("\x02")
        ):
            return sha
    if attempt.diff:
        return _same_patch(root, attempt.diff, since or ["HEAD", "-n", "500"])
    return None


def _same_patch(root: Path, diff: str, revisions: list[str]) -> str | None:
    wanted = git.git("patch-id", "--stable", cwd=root, input_text=diff).split()
    if not wanted:
        return None
    log = git.git("log", "-p", "--no-merges", "--format=commit %H", *revisions, cwd=root)
    for line in git.git("patch-id", "--stable", cwd=root, input_text=log).splitlines():
        patch_id, _, sha = line.partition(" ")
        if patch_id == wanted[0]:
            return sha.strip()
    return None


def _is_ancestor(root: Path, sha: str | None) -> bool:
    return bool(sha) and git.ok("merge-base", "--is-ancestor", str(sha), "HEAD", cwd=root)


def _conflict_message(ws: Workspace, sha: str, head: str) -> str:
    files = git.git("diff-tree", "--no-commit-id", "--name-only", "-r", sha, cwd=ws.root).split()
    later = git.git("log", "--format=%h %s", f"{sha}..{head}", "--", *files, cwd=ws.root)
    names = "; ".join(later.strip().splitlines()[:5]) or "later commits"
    return (
        f"cannot undo {sha[:10]}: later commits touch the same lines ({names}); "
        f"revert by hand with: git revert {sha}"
    )


def rollback(ws: Workspace) -> str:
    """Restore the last known good tree as a new commit on top of HEAD (no history lost)."""
    with ws.locked("selfforge rollback"), Journal(ws.state / "journal.db") as journal:
        recover(ws, journal)
        good = last_good(journal, ws.root)
        if good is None:
            raise UsageError(
                "no last known good commit is recorded; it is set when "
                "selfforge runs on its own repository"
            )
        head = git.git("rev-parse", "HEAD", cwd=ws.root).strip()
        if git.git("rev-parse", f"{good}^{{tree}}", cwd=ws.root) == git.git(
            "rev-parse", "HEAD^{tree}", cwd=ws.root
        ):
            return f"nothing to roll back: HEAD already has the tree of {good[:10]}"
        message = f"selfforge rollback to last known good {good[:10]}"
        commit = git.git(
            "commit-tree",
            f"{good}^{{tree}}",
            "-p",
            head,
            "-m",
            message,
            cwd=ws.root,
            env=git.identity_env(ws.root),
        ).strip()
        result = ws.land(commit=commit, base_commit=head, mode="merge", name="rollback")
        ws.remove_worktrees()
    return result.message
