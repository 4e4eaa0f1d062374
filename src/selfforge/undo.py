"""``selfforge undo``: revert the last landed change with a revert commit.

The revert is made in a worktree first; if later commits touched the same lines it
conflicts there and undo refuses, naming them. Only a clean revert is fast-forwarded
onto the user's branch, by the same landing rules as any change.
"""

from __future__ import annotations

from selfforge import git
from selfforge.errors import SelfforgeError, UsageError
from selfforge.journal import Journal
from selfforge.workspace import Workspace, recover


def undo_last(ws: Workspace) -> str:
    with ws.locked("selfforge undo"), Journal(ws.state / "journal.db") as journal:
        recovered = recover(ws, journal)
        landed = [a for a in journal.landed_attempts() if a.commit]
        target = next((a for a in reversed(landed) if a.reverted_by is None), None)
        if target is None or target.commit is None:
            raise SelfforgeError("nothing to undo: no landed change that is not already reverted")
        sha = target.commit
        if not git.ok("merge-base", "--is-ancestor", sha, "HEAD", cwd=ws.root):
            raise UsageError(
                f"commit {sha[:10]} is not on your current branch; "
                "check out the branch it landed on, then retry"
            )
        if not git.is_clean(ws.root):
            raise SelfforgeError(
                "your working tree has uncommitted changes; commit or stash "
                "them, then run `selfforge undo` again"
            )
        head = git.git("rev-parse", "HEAD", cwd=ws.root).strip()
        path, _ = ws.create_worktree("undo", head, f"undo-{sha[:10]}")
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


def _conflict_message(ws: Workspace, sha: str, head: str) -> str:
    files = git.git("diff-tree", "--no-commit-id", "--name-only", "-r", sha, cwd=ws.root).split()
    later = git.git("log", "--format=%h %s", f"{sha}..{head}", "--", *files, cwd=ws.root)
    names = "; ".join(later.strip().splitlines()[:5]) or "later commits"
    return (
        f"cannot undo {sha[:10]}: later commits touch the same lines ({names}); "
        f"revert by hand with: git revert {sha}"
    )
