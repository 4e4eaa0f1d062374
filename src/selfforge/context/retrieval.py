"""Choosing the files a task is about: BM25 over the index, history, mentions, neighbours.

BM25 (SQLite FTS5, Porter-stemmed) runs over each file's path words, definition names,
docstrings and every word of its text, weighted in that order of specificity. Files the
task names outright, and files defining identifiers it writes as code, are lifted above
anything BM25 finds. The project's history (history.py) adds the files that past commits
with similar subjects, and the latest commits, changed. The best hits then lend a small
part of their score to the files they import and that import them: enough to bring a
caller or a test into the chosen list, not enough to push a direct hit out of it
(bench/retrieval.py measures both).
Vendored, generated and fixture files (thirdparty.py) are ranked down unless the task
names them: a task about the project's code should find the project's own files.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from selfforge.context.graph import CodeGraph
from selfforge.context.index import CodeIndex
from selfforge.context.mentions import Mentions
from selfforge.context.words import match_any, query_words
from selfforge.repo.testpaths import is_test_path

# bm25() column weights: path, symbols, docstrings, all words of the file.
COLUMN_WEIGHTS = (4.0, 3.0, 2.0, 1.0)
BM25_CANDIDATES = 200
MENTIONED_FILE_BONUS = 2.0
MENTIONED_SYMBOL_BONUS = 1.5
NEIGHBOUR_SHARE = 0.1
UNMATCHED_NEIGHBOUR_SHARE = 0.05
NEIGHBOUR_SOURCES = 5
TEST_PENALTY = 0.6  # a task says what to change; tests are found through the graph
TEXT_PENALTY = 0.5  # files with no parser are known by their path only
THIRD_PARTY_PENALTY = 0.2  # vendored, generated, fixtures (bench/retrieval_vendored.py)


@dataclass
class ScoredFile:
    path: str
    score: float
    reasons: list[str] = field(default_factory=list)


def bm25_scores(index: CodeIndex, task: str) -> dict[str, float]:
    """BM25 score of each matching file, scaled so the best is 1."""
    words = query_words(task)
    if not words:
        return {}
    match = match_any(words)
    weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
    sql = (
        f"SELECT f.path, -bm25(search, {weights}) AS score FROM search"
        " JOIN files f ON f.id = search.rowid WHERE search MATCH ?"
        " ORDER BY score DESC LIMIT ?"
    )
    try:
        rows = index.conn.execute(sql, (match, BM25_CANDIDATES)).fetchall()
    except sqlite3.OperationalError:
        return {}  # a query FTS5 cannot parse finds nothing rather than failing the run
    best = max((s for _, s in rows), default=0.0)
    return {p: s / best for p, s in rows if best > 0 and s > 0}


def rank_for_task(
    index: CodeIndex,
    graph: CodeGraph,
    task: str,
    mentions: Mentions,
    prior: Mapping[str, float] | None = None,
    third_party: Callable[[str], bool] | None = None,
    history: Mapping[str, float] | None = None,
) -> list[ScoredFile]:
    """Files ranked for ``task``, best first; ``prior`` (e.g. PageRank) breaks ties;
    ``history`` (history.py) adds what past commits say; files ``third_party`` says are
    not the project's own are ranked down."""
    scored: dict[str, ScoredFile] = {}

    def add(path: str, amount: float, reason: str) -> None:
        entry = scored.setdefault(path, ScoredFile(path, 0.0))
        entry.score += amount
        entry.reasons.append(reason)

    files = index.files()
    source = {f.path for f in files if f.lang != "text"}

    def weight(path: str) -> float:
        # Text files are known by their path only (BM25) or as documentation (history).
        return (TEST_PENALTY if is_test_path(path) else 1.0) * (
            1.0 if path in source else TEXT_PENALTY
        )

    for path, score in bm25_scores(index, task).items():
        add(path, score * weight(path), f"bm25 {score:.2f}")
    indexed = {f.path for f in files}
    for path, score in (history or {}).items():
        if path in indexed:  # a file since deleted or renamed is no one's to edit
            add(path, score * weight(path), f"history {score:.2f}")
    for path in mentions.files:
        add(path, MENTIONED_FILE_BONUS, "named in the task")
    for ident in mentions.identifiers:
        owners = graph.definers.get(ident, set())
        for owner in owners:
            add(owner, MENTIONED_SYMBOL_BONUS / len(owners), f"defines {ident}")
    _add_neighbours(graph, scored, add)
    if prior:
        top = max(prior.values(), default=0.0) or 1.0
        for entry in scored.values():
            entry.score += 0.05 * prior.get(entry.path, 0.0) / top
    if third_party is not None:
        named = set(mentions.files)
        for entry in scored.values():
            if entry.path not in named and third_party(entry.path):
                entry.score *= THIRD_PARTY_PENALTY
                entry.reasons.append("not the project's own code")
    return sorted(scored.values(), key=lambda f: (-f.score, f.path))


def _add_neighbours(
    graph: CodeGraph, scored: dict[str, ScoredFile], add: Callable[[str, float, str], None]
) -> None:
    """Lend part of the best hits' scores to the files they import or are imported by.

    A neighbour that matched the task itself is lifted (two pieces of evidence agree); one
    that did not gets only a little, enough to follow the hits in the chosen list but not
    to push a direct hit out of it.
    """
    matched = set(scored)
    leaders = sorted(scored.values(), key=lambda f: -f.score)[:NEIGHBOUR_SOURCES]
    for leader in leaders:
        neighbours = graph.neighbours(leader.path)
        # A hub imported by everything should not inherit every hit's score in full.
        share = leader.score / max(1.0, len(neighbours) ** 0.5 / 2)
        for neighbour in neighbours:
            factor = NEIGHBOUR_SHARE if neighbour in matched else UNMATCHED_NEIGHBOUR_SHARE
            add(neighbour, factor * share, f"next to {leader.path}")
