"""What the project's history says a task is about: the files past commits changed.

A subject like "Migrated installer to avoid pkg_resources" shares few words with the
code it changes, but earlier commits whose subjects spoke of pkg_resources or installers
changed the files such a task changes again. Two signals, both from commits before the
task (merges left out: their subjects name branches, and their files are their parents'):

- subjects: the last ``HISTORY_COMMITS`` subjects are searched with BM25 like the code
  is; each matching commit lends its score to the files it changed, split among them, so
  a sweep across fifty files says little about any one;
- recency: work comes in series, so the files of the last few commits get a share that
  halves every ``RECENT_HALF_LIFE`` commits, capped so that a file changed in each of
  them cannot outweigh a file the task's words find.

bench/retrieval_vendored.py measures both, on setuptools, with the history cut at each
task's own commit.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from selfforge.context.words import match_any, query_words, search_words
from selfforge.errors import GitError
from selfforge.repo import git

HISTORY_COMMITS = 5000
MATCHED_COMMITS = 50  # the best-matching subjects that lend their score
SUBJECT_WEIGHT = 0.75  # of the best-matching file's share; BM25 over the code tops at 1
RECENT_WEIGHT = 0.4
RECENT_COMMITS = 20
RECENT_HALF_LIFE = 5.0
RECENT_CAP = 0.8  # a file in every recent commit must not outweigh what the task says


@dataclass(frozen=True)
class Change:
    subject: str
    files: tuple[str, ...]


def read_history(repo_root: Path, rev: str = "HEAD", limit: int = HISTORY_COMMITS) -> list[Change]:
    """The last ``limit`` non-merge commits reachable from ``rev``, newest first; none
    when ``rev`` does not exist (a repository without commits has no history)."""
    return [c for c in _read_commits(repo_root, rev, limit) if c.files]


def _read_commits(repo_root: Path, rev: str, limit: int) -> list[Change]:
    """Every one of those commits, one that changed no file too (what a later commit's
    history, made from this one's, must count to stop at ``limit``)."""
    try:
        out = git.git(
            "log", "--no-merges", "--no-renames", "--format=%x00%s", "--name-only",
            f"-n{limit}", rev, "--", cwd=repo_root,
        )  # fmt: skip
    except GitError:
        return []
    commits = []
    for record in out.split("\0")[1:]:
        subject, _, names = record.partition("\n")
        commits.append(Change(subject.strip(), tuple(n for n in names.splitlines() if n)))
    return commits


class History:
    """Past commits, newest first; ``scores(task)`` ranks the files they changed."""

    def __init__(self, changes: list[Change]) -> None:
        self.changes = changes
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.execute(
            "CREATE VIRTUAL TABLE subjects USING fts5("
            "words, tokenize = \"porter unicode61 tokenchars '_'\")"
        )
        self.conn.executemany(
            "INSERT INTO subjects(rowid, words) VALUES (?, ?)",
            [(i, " ".join(search_words(c.subject))) for i, c in enumerate(changes)],
        )

    def scores(self, task: str, *, recent: bool = True) -> dict[str, float]:
        """Subject matches (the best file ``SUBJECT_WEIGHT``) plus, unless turned off,
        the recency share of each file; nothing for a task without a word to search."""
        if not query_words(task):
            return {}
        found = {p: SUBJECT_WEIGHT * s for p, s in self.subject_scores(task).items()}
        if recent:
            for path, score in self.recent_scores().items():
                found[path] = found.get(path, 0.0) + score
        return found

    def subject_scores(self, task: str) -> dict[str, float]:
        """Each file's share of the matching commits' BM25 scores, scaled so the best is 1."""
        words = query_words(task)
        if not words:
            return {}
        match = match_any(words)
        sql = (
            "SELECT rowid, -bm25(subjects) AS score FROM subjects WHERE subjects MATCH ?"
            " ORDER BY score DESC LIMIT ?"
        )
        try:
            rows = self.conn.execute(sql, (match, MATCHED_COMMITS)).fetchall()
        except sqlite3.OperationalError:
            return {}
        totals: dict[str, float] = defaultdict(float)
        for rowid, score in rows:
            files = self.changes[rowid].files
            for path in files:
                totals[path] += score / len(files)
        best = max(totals.values(), default=0.0)
        return {p: s / best for p, s in totals.items() if best > 0}

    def recent_scores(self) -> dict[str, float]:
        """The files of the last ``RECENT_COMMITS`` commits, the newest weighing most; a
        commit's share is split by the square root of how many files it changed."""
        found: dict[str, float] = defaultdict(float)
        for age, change in enumerate(self.changes[:RECENT_COMMITS]):
            share = RECENT_WEIGHT * 0.5 ** (age / RECENT_HALF_LIFE) / len(change.files) ** 0.5
            for path in change.files:
                found[path] += share
        return {p: min(s, RECENT_CAP) for p, s in found.items()}


# One History per commit: a run's attempts mostly start from the same one, and a commit's
# history is the same in every worktree of the repository.
_CACHE: dict[str, History] = {}
_KEPT = 8
DISK_KEPT = 3  # commits whose history stays on disk (under the state dir's history/)


def load_history(
    repo_root: Path, commit: str | None = None, state_dir: Path | None = None
) -> History:
    """The history up to ``commit`` (default: ``repo_root``'s HEAD), read once per commit:
    a run reads it from the repository while the attempt's worktree is still being made.
    With ``state_dir`` it is kept on disk, and the history of a commit with one parent
    whose history is kept is that commit and its parent's (what ``git log`` lists, with
    one git call instead of a walk of thousands of commits: the next run after a landing)."""
    head = commit or git.head_commit(repo_root) or ""
    if not head:
        return History([])
    cached = _CACHE.get(head)
    if cached is not None:
        return cached
    commits = _from_disk(state_dir, head) if state_dir is not None else None
    if commits is None and state_dir is not None:
        commits = _from_parent(repo_root, state_dir, head)
    if commits is None:
        commits = _read_commits(repo_root, head, HISTORY_COMMITS)
    if state_dir is not None:
        _to_disk(state_dir, head, commits)
    history = History([c for c in commits if c.files])
    while len(_CACHE) >= _KEPT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[head] = history
    return history


def _from_parent(repo_root: Path, state_dir: Path, head: str) -> list[Change] | None:
    """``head``'s commits from its only parent's, kept on disk; None when it is a merge,
    a root commit, or the parent's history is not kept."""
    try:
        out = git.git(
            "log", "-n1", "--no-renames", "--format=%x00%P%x00%s", "--name-only", head, "--",
            cwd=repo_root,
        )  # fmt: skip
    except GitError:
        return None
    _, parents, rest = out.split("\0", 2)
    if len(parents.split()) != 1:
        return None
    before = _from_disk(state_dir, parents.strip())
    if before is None:
        return None
    subject, _, names = rest.partition("\n")
    own = Change(subject.strip(), tuple(n for n in names.splitlines() if n))
    return [own, *before][:HISTORY_COMMITS]


def _disk_path(state_dir: Path, commit: str) -> Path:
    return state_dir / "history" / f"{commit}.json"


def _from_disk(state_dir: Path | None, commit: str) -> list[Change] | None:
    if state_dir is None or not git.is_commit_id(commit):
        return None
    try:
        data = json.loads(_disk_path(state_dir, commit).read_text())
        return [Change(str(s), tuple(str(f) for f in files)) for s, files in data["commits"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: read from git again


def _to_disk(state_dir: Path, commit: str, commits: list[Change]) -> None:
    if not git.is_commit_id(commit):
        return
    folder = state_dir / "history"
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        path = _disk_path(state_dir, commit)
        if not path.exists():
            tmp = folder / f".{commit}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps({"commits": [[c.subject, list(c.files)] for c in commits]}))
            tmp.replace(path)
        kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-DISK_KEPT]:
            old.unlink(missing_ok=True)
