"""``build_context``: what a model is shown for one task, within a token budget.

The chosen files come first, whole when they fit and as focused excerpts when they do
not; the repo map covers the rest of the repository with whatever budget remains.
Lessons from earlier attempts are carried through untouched: they are the loop's
memory and cost little.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.context.excerpt import focused_excerpt
from selfforge.context.files import read_source
from selfforge.context.graph import CodeGraph, load_graph
from selfforge.context.history import load_history
from selfforge.context.index import CodeIndex, IndexStats, open_index
from selfforge.context.mentions import Mentions, find_mentions
from selfforge.context.repomap import build_repo_map, rank_files
from selfforge.context.retrieval import ScoredFile, rank_for_task
from selfforge.context.thirdparty import third_party
from selfforge.context.tokens import estimate_tokens
from selfforge.context.words import query_words

MAX_CHOSEN = 10
RELATIVE_CUTOFF = 0.2  # files scoring under this share of the best are not "chosen"
FILES_SHARE = 0.65  # of the budget left after lessons; the map gets the rest
MIN_EXCERPT_TOKENS = 60
FIRST_FILE_SHARE = 0.75


@dataclass(frozen=True)
class FileContext:
    path: str
    text: str
    whole: bool


@dataclass
class ContextBundle:
    repo_map: str
    files: list[FileContext]
    lessons: list[str]
    chosen: list[str]  # ranked paths for the task, best first
    index_stats: IndexStats | None = None
    tokens: dict[str, int] = field(default_factory=dict)  # "files", "repo_map", "lessons"


def build_context(
    repo_root: Path,
    task: str,
    *,
    state_dir: Path,
    token_budget: int,
    lessons: Sequence[str] = (),
) -> ContextBundle:
    """Update the index, choose files for ``task`` and fit them and the map in the budget."""
    index = open_index(state_dir)
    try:
        stats = index.update(repo_root)
        bundle = _bundle(index, repo_root, task, token_budget, list(lessons))
    finally:
        index.close()
    bundle.index_stats = stats
    return bundle


def prewarm(repo_root: Path, *, state_dir: Path) -> None:
    """What ``build_context`` does before it reads the task: the index brought up to date,
    its graph and the history loaded into this process's caches. Run in a thread while
    the baseline's tests run (its own SQLite connection; no journal, no output), it takes
    that work off the path of a first run."""
    index = open_index(state_dir)
    try:
        index.update(repo_root)
        cached_graph(index)
    finally:
        index.close()
    load_history(repo_root, state_dir=state_dir)


# The graph of the last index seen per index file: a run's attempts mostly start from the
# same commit, and rebuilding the graph costs seconds on large repositories.
_GRAPHS: dict[str, tuple[str, CodeGraph]] = {}


def cached_graph(index: CodeIndex) -> CodeGraph:
    """``load_graph(index)``, reused while the index's content is unchanged."""
    key, signature = str(index.db_path), index.signature()
    cached = _GRAPHS.get(key)
    if cached is not None and cached[0] == signature:
        return cached[1]
    graph = load_graph(index)
    _GRAPHS[key] = (signature, graph)
    return graph


def _bundle(
    index: CodeIndex, repo_root: Path, task: str, budget: int, lessons: list[str]
) -> ContextBundle:
    graph = cached_graph(index)
    mentions = find_mentions(task, graph.paths, graph.definers)
    chosen, file_rank = _choose_and_rank(index, graph, task, mentions, repo_root)
    lesson_tokens = sum(estimate_tokens(lesson) for lesson in lessons)
    room = max(budget - lesson_tokens, 0)
    files = _fit_files(index, repo_root, chosen, query_words(task), int(room * FILES_SHARE))
    files_tokens = sum(estimate_tokens(f.text) for f in files)
    shown_whole = {f.path for f in files if f.whole}
    repo_map = build_repo_map(
        graph, mentions, room - files_tokens, exclude=shown_whole, file_rank=file_rank
    )
    return ContextBundle(
        repo_map=repo_map.text,
        files=files,
        lessons=lessons,
        chosen=chosen,
        tokens={"files": files_tokens, "repo_map": repo_map.tokens, "lessons": lesson_tokens},
    )


def _choose_and_rank(
    index: CodeIndex, graph: CodeGraph, task: str, mentions: Mentions, repo_root: Path
) -> tuple[list[str], dict[str, float]]:
    """The files chosen for the task, and file ranks for the map personalised toward them:
    the map then outlines the chosen files' neighbourhood, not the repository's hubs."""
    prior = rank_files(graph, mentions)
    history = load_history(repo_root).scores(task) if task.strip() else {}
    ranked = rank_for_task(index, graph, task, mentions, prior, third_party(repo_root), history)
    chosen = choose(ranked)
    if not chosen:
        return chosen, prior
    scores = {f.path: f.score for f in ranked if f.path in set(chosen)}
    return chosen, rank_files(graph, mentions, scores)


def choose(ranked: list[ScoredFile]) -> list[str]:
    """The ranked files worth showing: the best ones, and none far below the best."""
    if not ranked:
        return []
    floor = ranked[0].score * RELATIVE_CUTOFF
    return [f.path for f in ranked[:MAX_CHOSEN] if f.score >= floor]


def _fit_files(
    index: CodeIndex, repo_root: Path, chosen: list[str], words: list[str], budget: int
) -> list[FileContext]:
    files: list[FileContext] = []
    left = budget
    for rank, path in enumerate(chosen):
        src = read_source(repo_root / path)
        if src is None:
            continue
        text = src.decode("utf-8", "replace")
        # The best file may fill most of the room, never all of it: a second file
        # (often its caller or its test) is worth more than the best file's tail.
        limit = int(left * FIRST_FILE_SHARE) if rank == 0 and len(chosen) > 1 else left
        # Never below a token per 4 characters: a file that long cannot fit whole, and
        # is not worth estimating (a large file is a full regex pass).
        cost = estimate_tokens(text) if len(text) // 4 <= limit else limit + 1
        if cost <= limit:
            files.append(FileContext(path, text, whole=True))
            left -= cost
            continue
        if limit < MIN_EXCERPT_TOKENS:
            continue
        excerpt = focused_excerpt(text, index.definitions(path), words, limit)
        if excerpt.strip():
            files.append(FileContext(path, excerpt, whole=False))
            left -= estimate_tokens(excerpt)
    return files


@dataclass(frozen=True)
class MapView:
    text: str  # the repo map
    tokens: int
    files: list[str]  # chosen for the task, best first; without a task, the map's files
    index_stats: IndexStats


def map_for_task(repo_root: Path, *, state_dir: Path, token_budget: int, task: str = "") -> MapView:
    """The repo map within ``token_budget`` and, given a task, the files chosen for it."""
    index = open_index(state_dir)
    try:
        stats = index.update(repo_root)
        graph = load_graph(index)
        mentions = find_mentions(task, graph.paths, graph.definers)
        chosen, file_rank = _choose_and_rank(index, graph, task, mentions, repo_root)
        repo_map = build_repo_map(graph, mentions, token_budget, file_rank=file_rank)
        chosen = chosen if task.strip() else repo_map.files
    finally:
        index.close()
    return MapView(repo_map.text, repo_map.tokens, chosen, stats)
