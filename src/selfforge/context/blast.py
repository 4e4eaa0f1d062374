"""Blast radius of an edit: the modules that import what changed, and their tests.

The loop runs these tests first so a candidate that breaks its neighbours fails in
seconds rather than after the whole suite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.context.graph import CodeGraph, load_graph
from selfforge.context.index import open_index
from selfforge.repo.testpaths import is_test_path

MAX_DEPTH = 3  # importers of importers of importers; beyond that, run the full suite
MAX_MODULES = 200
MIN_REFERENCE_WEIGHT = 0.25  # about one use of a fairly rare name only this file defines


@dataclass(frozen=True)
class BlastRadius:
    modules: list[str] = field(default_factory=list)  # importers of the change, nearest first
    tests: list[str] = field(default_factory=list)  # test files to run first, nearest first


def blast_radius(repo_root: Path, changed: Sequence[str], *, state_dir: Path) -> BlastRadius:
    """Update the index, then find what depends on ``changed`` (repo-relative paths)."""
    index = open_index(state_dir)
    try:
        index.update(repo_root)
        return radius_in_graph(load_graph(index), changed)
    finally:
        index.close()


def radius_in_graph(graph: CodeGraph, changed: Sequence[str]) -> BlastRadius:
    reached = _importers_by_distance(graph, changed)
    modules = [p for p in reached if p not in changed and not is_test_path(p)]
    tests = [p for p in reached if is_test_path(p)]
    seen = set(tests)
    for test in [*_named_tests(graph, [*changed, *modules]), *_referring_tests(graph, changed)]:
        if test not in seen:
            seen.add(test)
            tests.append(test)
    return BlastRadius(modules=modules[:MAX_MODULES], tests=tests)


def _named_tests(graph: CodeGraph, paths: Sequence[str]) -> list[str]:
    return [test for path in paths for test in tests_named_for(path, graph.paths)]


def _referring_tests(graph: CodeGraph, changed: Sequence[str]) -> list[str]:
    """Tests that use names the changed files define without importing them (fixtures,
    ``importlib``, plugins), strongest use first."""
    weights: dict[str, float] = {}
    for test, uses in graph.references.items():
        if is_test_path(test):
            weight = sum(uses.get(path, 0.0) for path in changed)
            if weight >= MIN_REFERENCE_WEIGHT:
                weights[test] = weight
    return sorted(weights, key=lambda t: (-weights[t], t))


def _importers_by_distance(graph: CodeGraph, changed: Sequence[str]) -> list[str]:
    """Breadth-first over reverse imports: the changed files, then their importers, ..."""
    order = list(dict.fromkeys(changed))
    frontier = list(order)
    seen = set(order)
    for _ in range(MAX_DEPTH):
        next_frontier = []
        for path in frontier:
            for importer in sorted(graph.importers.get(path, ())):
                if importer not in seen:
                    seen.add(importer)
                    next_frontier.append(importer)
        order.extend(next_frontier)
        frontier = next_frontier
        if len(order) > MAX_MODULES:
            break
    return order


def tests_named_for(path: str, paths: Sequence[str]) -> list[str]:
    """Tests named after a module: ``test_foo.py``, ``foo_test.py``, ``foo.test.js``,
    ``foo.spec.ts`` or anything under a ``foo/`` directory of tests."""
    name = path.rsplit("/", 1)[-1]
    stem = name.split(".", 1)[0]
    if stem in ("__init__", "index"):
        parts = path.split("/")
        stem = parts[-2] if len(parts) > 1 else stem
    return [p for p in paths if is_test_path(p) and _named_after(p, stem)]


def _named_after(test: str, stem: str) -> bool:
    name = test.rsplit("/", 1)[-1]
    base = name.split(".", 1)[0]
    return (
        base in (f"test_{stem}", f"{stem}_test", f"test_{stem}s")
        or name.startswith((f"{stem}.test.", f"{stem}.spec."))
        or f"/{stem}/" in f"/{test}"
    )
