"""``selfforge clean``: remove what runs leave behind, and say what.

Leftovers are the worktrees a run keeps for the next one (``worktrees/`` of the
repository's trees folder, outside the checkout: see ``trees.py``; a copy of the tree
each, made again when needed) and any a killed run left, the judge's throwaway git dirs
of a killed run (``tmp/`` there), ``[checks] setup``'s installs (``setup/``), the control
groups of checks whose run was killed, and the ``selfforge/…`` branches kept for changes
that did not land by fast-forward. A kept branch already merged into your branch is removed; one
that is not is only listed unless ``--branches`` is given, and every removed branch is
printed with its commit, so it can be made again.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field

from selfforge.judge.sandbox.limits import remove_leftover_groups
from selfforge.repo import git
from selfforge.repo.workspace import KEEP_BRANCH_PREFIX, KEPT_SLOTS, TMP_BRANCH_PREFIX, Workspace


@dataclass
class Cleaned:
    removed: list[str] = field(default_factory=list)  # what was (or would be) removed
    kept: list[str] = field(default_factory=list)  # what stays, and why

    def lines(self, dry_run: bool) -> list[str]:
        verb = "would remove" if dry_run else "removed"
        out = [f"{verb} {item}" for item in self.removed]
        out += [f"kept    {item}" for item in self.kept]
        return out or ["nothing to clean"]


def clean(ws: Workspace, *, branches: bool = False, dry_run: bool = False) -> Cleaned:
    """Remove leftovers; refuses (LockedError) while a run holds the repository."""
    done = Cleaned()
    with ws.locked("selfforge clean"):
        for kind, folder in (("worktree", "worktrees"), ("scratch", "tmp"), ("setup", "setup")):
            for path in sorted((ws.trees / folder).glob("*")):
                kept = kind == "worktree" and path.name in KEPT_SLOTS
                done.removed.append(f"{kind} {path}{' (kept for the next run)' if kept else ''}")
                if not dry_run:
                    shutil.rmtree(path, ignore_errors=True)
        if not dry_run:
            for empty in (ws.trees / "worktrees", ws.scratch, ws.trees / "setup", ws.trees):
                with contextlib.suppress(OSError):
                    empty.rmdir()  # nothing of this repository's is left in /var/tmp
            git.git("worktree", "prune", cwd=ws.root, check=False)
        for group in remove_leftover_groups(dry_run=dry_run):
            done.removed.append(f"control group {group} (a killed run's check)")
        _branches(ws, done, remove_unmerged=branches, dry_run=dry_run)
    return done


def _branches(ws: Workspace, done: Cleaned, *, remove_unmerged: bool, dry_run: bool) -> None:
    listing = git.git(
        "for-each-ref",
        "--format=%(refname:short) %(objectname)",
        f"refs/heads/{KEEP_BRANCH_PREFIX.rstrip('/')}",
        cwd=ws.root,
        check=False,
    )
    current = git.head_state(ws.root).branch
    for line in listing.splitlines():
        name, _, sha = line.partition(" ")
        if not name.startswith(KEEP_BRANCH_PREFIX) or name == current:
            continue
        merged = git.ok("merge-base", "--is-ancestor", sha, "HEAD", cwd=ws.root)
        temporary = name.startswith(TMP_BRANCH_PREFIX)
        if not (merged or temporary or remove_unmerged):
            done.kept.append(f"branch {name} ({sha[:10]}): not merged; --branches removes it")
            continue
        why = "merged" if merged else "temporary" if temporary else "not merged"
        restore = f"`git branch {name} {sha[:10]}` restores it"
        done.removed.append(f"branch {name} ({sha[:10]}, {why}; {restore})")
        if not dry_run:
            git.git("branch", "-D", name, cwd=ws.root)
