"""The repo map: a ranked outline of the definitions that matter most, within a budget.

Files are ranked by PageRank over the reference and import graph, personalised toward
the files and identifiers the task mentions; a definition inherits its file's rank,
raised when other files use its name and strongly when the task names it. The outline
takes the best definitions that fit the token budget, shown in file order so a model
reads them as code.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from selfforge.context.graph import CodeGraph, edge_weights, pagerank
from selfforge.context.index import DefRecord
from selfforge.context.mentions import Mentions
from selfforge.context.tokens import estimate_tokens

MAX_LINE = 160
MAX_MISSES = 200
FOCUS_SHARE = 0.5


@dataclass(frozen=True)
class RepoMap:
    text: str
    files: list[str]  # files shown, best first
    tokens: int


def rank_files(
    graph: CodeGraph, mentions: Mentions, chosen: Mapping[str, float] | None = None
) -> dict[str, float]:
    """PageRank of every file, personalised toward what the task mentions and, when
    given, the files retrieval chose for it (weighted by their scores)."""
    focus: dict[str, float] = dict(chosen or {})
    for path in mentions.files:
        focus[path] = focus.get(path, 0.0) + 1.0
    for ident in mentions.identifiers:
        owners = graph.definers.get(ident, set())
        for owner in owners:
            focus[owner] = focus.get(owner, 0.0) + 1.0 / len(owners)
    rank = pagerank(graph.paths, edge_weights(graph), focus or None)
    # PageRank lifts the focus's neighbours as much as the focus itself; the files the
    # task is about should still lead, so they also keep a direct share.
    total = sum(focus.values())
    for path, weight in focus.items():
        if path in rank and total > 0:
            rank[path] += FOCUS_SHARE * weight / total
    return rank


def rank_definitions(
    graph: CodeGraph, file_rank: dict[str, float], mentions: Mentions
) -> list[DefRecord]:
    scored = []
    for d in graph.definitions:
        used = math.log1p(graph.users[d.name]) * graph.specificity(d.name)
        score = file_rank.get(d.path, 0.0) * (1.0 + used)
        if d.name in mentions.identifiers:
            score *= 10
        if d.name.startswith("_"):
            score *= 0.1  # private helpers are the least useful to a reader of the map
        if d.kind == "method":
            score *= 0.5
        scored.append((score, d))
    scored.sort(key=lambda item: -item[0])
    return [d for _, d in scored]


def outline_line(d: DefRecord) -> str:
    indent = "  " * (1 + (d.parent.count(".") + 1 if d.parent else 0))
    doc = f"  # {d.doc}" if d.doc else ""
    return f"{indent}{d.signature}{doc}"[:MAX_LINE]


def render(defs: list[DefRecord], file_order: dict[str, int]) -> str:
    by_file: dict[str, list[DefRecord]] = defaultdict(list)
    for d in defs:
        by_file[d.path].append(d)
    lines: list[str] = []
    for path in sorted(by_file, key=lambda p: file_order.get(p, 0)):
        lines.append(f"{path}:")
        lines.extend(outline_line(d) for d in sorted(by_file[path], key=lambda d: d.line))
    return "\n".join(lines) + ("\n" if lines else "")


def select_within(ranked: list[DefRecord], budget: int) -> list[DefRecord]:
    """The best definitions whose outline lines fit ``budget``, costed line by line."""
    chosen: list[DefRecord] = []
    files: set[str] = set()
    used = misses = 0
    for d in ranked:
        cost = estimate_tokens(outline_line(d) + "\n")
        if d.path not in files:
            cost += estimate_tokens(f"{d.path}:\n")
        if used + cost > budget:
            misses += 1
            if misses > MAX_MISSES:  # the budget is as good as full
                break
            continue
        chosen.append(d)
        files.add(d.path)
        used += cost
    return chosen


def build_repo_map(
    graph: CodeGraph,
    mentions: Mentions,
    token_budget: int,
    *,
    exclude: Collection[str] = (),
    file_rank: dict[str, float] | None = None,
) -> RepoMap:
    """The outline of the best-ranked definitions (outside ``exclude``) within the budget."""
    if file_rank is None:
        file_rank = rank_files(graph, mentions)
    exclude = set(exclude)
    ranked = [d for d in rank_definitions(graph, file_rank, mentions) if d.path not in exclude]
    order = {p: i for i, p in enumerate(sorted(file_rank, key=lambda p: -file_rank[p]))}
    chosen = select_within(ranked, token_budget)
    best = render(chosen, order)
    # Line costs are summed; should the whole cost more, drop the weakest until it fits.
    while chosen and estimate_tokens(best) > token_budget:
        chosen.pop()
        best = render(chosen, order)
    shown = [line[:-1] for line in best.splitlines() if not line.startswith(" ")]
    return RepoMap(text=best, files=shown, tokens=estimate_tokens(best))
