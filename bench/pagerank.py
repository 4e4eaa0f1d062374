"""Benchmark: selfforge's hand-written PageRank against networkx's, on the same graph.

The graph is the one the repo map ranks: the Python standard library made a git
repository (as bench/index.py does), indexed, loaded with ``load_graph`` and weighted by
``edge_weights``. Both rank it with the same damping (0.85), teleport vector, dangling
rule (dangling rank goes back through the teleport vector) and stopping rule (L1 change
under 1e-6), twice: uniform, and personalised toward a task's files as ``rank_files``
does. Timed (CPU seconds, best and median of --repeat runs):

  hand-written     selfforge.context.graph.pagerank: dicts, pure Python
  networkx         networkx.pagerank (SciPy sparse matrices); once with the conversion
                   of selfforge's graph into an nx.DiGraph counted, once without
  networkx-python  networkx's own pure-Python power iteration

and the rankings compared: the top-20 overlap and the largest absolute difference.
Needs networkx and SciPy (`pip install networkx scipy`); asserts nothing.
Run: .venv/bin/python bench/pagerank.py [--repeat 5] [--repo DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from selfforge.context.graph import edge_weights, load_graph, pagerank
from selfforge.context.index import open_index

sys.path.insert(0, str(Path(__file__).parent))
from index import make_repo  # a sibling script, not a package

DAMPING = 0.85
TOLERANCE = 1e-6  # selfforge's: the L1 change between iterations
MAX_ITERATIONS = 100
TOP = 20
# A task's focus as rank_files builds it: the files it names or retrieval chose.
FOCUS = {"json/decoder.py": 1.0, "json/scanner.py": 0.5, "json/__init__.py": 0.5}

Ranking = dict[str, float]


def cpu_times(run: Callable[[], Ranking], repeat: int) -> tuple[Ranking, list[float]]:
    times, result = [], {}
    for _ in range(repeat):
        started = time.process_time()
        result = run()
        times.append(time.process_time() - started)
    return result, times


def to_networkx(nodes: list[str], edges: Mapping[str, Mapping[str, float]]) -> object:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    known = set(nodes)
    graph.add_weighted_edges_from(
        (src, dst, w) for src, row in edges.items() for dst, w in row.items() if dst in known
    )
    return graph


def agreement(ours: Ranking, theirs: Ranking) -> str:
    top = set(sorted(ours, key=ours.__getitem__, reverse=True)[:TOP])
    their_top = set(sorted(theirs, key=theirs.__getitem__, reverse=True)[:TOP])
    diff = max(abs(ours[n] - theirs.get(n, 0.0)) for n in ours)
    return f"top-{TOP} overlap {len(top & their_top)}/{TOP}, max |diff| {diff:.1e}"


def compare(
    nodes: list[str], edges: dict[str, dict[str, float]], focus: Ranking | None, repeat: int
) -> None:
    import networkx as nx
    from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

    # networkx stops when the L1 change is under N * tol: the same rule as ours.
    settings = {
        "alpha": DAMPING,
        "personalization": focus,
        "tol": TOLERANCE / len(nodes),
        "max_iter": MAX_ITERATIONS,
        "weight": "weight",
    }
    ours, ours_t = cpu_times(
        lambda: pagerank(nodes, edges, focus, iterations=MAX_ITERATIONS), repeat
    )
    built = to_networkx(nodes, edges)
    _, build_t = cpu_times(lambda: to_networkx(nodes, edges), repeat)
    scipy_rank, scipy_t = cpu_times(lambda: nx.pagerank(built, **settings), repeat)
    python_rank, python_t = cpu_times(lambda: _pagerank_python(built, **settings), repeat)
    both_t = [b + s for b, s in zip(build_t, scipy_t, strict=True)]

    def line(name: str, times: list[float], extra: str = "") -> None:
        best, median = min(times) * 1000, statistics.median(times) * 1000
        print(f"  {name:34} best {best:7.1f} ms   median {median:7.1f} ms   {extra}")

    line("hand-written", ours_t)
    line("networkx (SciPy), with conversion", both_t, agreement(ours, scipy_rank))
    line("networkx (SciPy), graph given", scipy_t)
    line("networkx pure Python, graph given", python_t, agreement(ours, python_rank))


def import_cost() -> str:
    """CPU to import networkx and SciPy's sparse matrices, in a fresh process."""
    code = (
        "import time; t = time.process_time(); import networkx; a = time.process_time() - t;"
        " import scipy.sparse; print(a, time.process_time() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    networkx_s, both_s = (float(x) for x in out.stdout.split())
    return f"import (CPU): networkx {networkx_s:.2f} s, with scipy.sparse {both_s:.2f} s"


def main() -> None:
    try:
        import networkx  # noqa: F401
        import scipy  # noqa: F401
    except ImportError:
        raise SystemExit(
            "bench/pagerank.py needs networkx and SciPy: pip install networkx scipy"
        ) from None
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--repo", type=Path, help="an already indexed copy (else one is made)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="selfforge-bench-pagerank-") as tmp:
        repo = args.repo or make_repo(Path(tmp) / "stdlib")
        index = open_index(repo / ".selfforge")
        index.update(repo)
        graph = load_graph(index)
        nodes, edges = graph.paths, edge_weights(graph)
        links = sum(len(row) for row in edges.values())
        python = sys.version.split()[0]
        print(f"graph: Python {python} standard library, {len(nodes)} files, {links} links")
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        for name, focus in (("uniform", None), ("personalised", FOCUS)):
            print(f"{name}:")
            compare(nodes, edges, focus, args.repeat)
        print(import_cost())
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
