"""The repo map: budgets, ranking toward the task, and the graph it ranks on."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfforge.context.build import map_for_task
from selfforge.context.graph import load_graph, module_table, pagerank
from selfforge.context.index import open_index
from selfforge.context.tokens import estimate_tokens
from test_context_sample import shop_repo


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop_repo(tmp_path_factory.mktemp("repomap") / "shop")


def repo_map(repo: Path, tokens: int, task: str = "") -> str:
    return map_for_task(repo, state_dir=repo / ".selfforge", token_budget=tokens, task=task).text


@pytest.mark.parametrize("budget", [20, 60, 150, 400, 5000])
def test_the_map_fits_its_budget(shop: Path, budget: int) -> None:
    text = repo_map(shop, budget)
    assert estimate_tokens(text) <= budget
    assert text.strip() or budget < 50  # a tiny budget may not hold one signature


def test_a_larger_budget_shows_more(shop: Path) -> None:
    small, large = repo_map(shop, 60), repo_map(shop, 400)
    assert len(large.splitlines()) > len(small.splitlines())
    assert "def apply_discount(price: float, percent: float) -> float" in large


def test_the_map_leads_with_what_the_task_names(shop: Path) -> None:
    text = repo_map(shop, 60, task="Stock.reserve should refuse negative quantities")
    assert text.splitlines()[0] == "shop/inventory.py:"
    assert "def reserve(self, sku: str, quantity: int) -> bool" in text


def test_the_map_shows_signatures_nested_under_classes_with_doc_lines(shop: Path) -> None:
    text = repo_map(shop, 5000)
    assert "  class Cart  # Items a customer intends to buy.\n" in text
    assert "    def total(self, percent: float = 0.0) -> float  # Sum of the item" in text


def test_imports_resolve_to_files_absolute_and_relative(shop: Path) -> None:
    index = open_index(shop / ".selfforge")
    index.update(shop)
    graph = load_graph(index)
    assert graph.imports["shop/cart.py"] == {"shop/pricing.py"}
    assert graph.imports["shop/shipping.py"] == {"shop/cart.py"}
    assert "shop/shipping.py" in graph.imports["shop/report.py"]
    assert "tests/test_pricing.py" in graph.importers["shop/pricing.py"]


def test_module_names_start_at_the_topmost_package() -> None:
    table = module_table(["src/app/__init__.py", "src/app/core.py", "scripts/tool.py"])
    assert table["app.core"] == table["src.app.core"] == "src/app/core.py"
    assert table["app"] == "src/app/__init__.py"
    assert table["tool"] == "scripts/tool.py"


def test_pagerank_favours_the_hub_and_follows_personalisation() -> None:
    nodes = ["a", "b", "c", "hub"]
    edges = {"a": {"hub": 1.0}, "b": {"hub": 1.0}, "c": {"hub": 1.0}, "hub": {"a": 1.0}}
    plain = pagerank(nodes, edges)
    assert max(plain, key=plain.__getitem__) == "hub"
    assert sum(plain.values()) == pytest.approx(1.0)
    focused = pagerank(nodes, edges, {"c": 1.0})
    assert focused["c"] > plain["c"]
    assert focused["b"] < plain["b"]


def test_pagerank_matches_the_closed_form_with_weights_and_a_dangling_node() -> None:
    # a sends all its rank to b (a's weights only set proportions); b links nowhere, so
    # its rank goes back through the teleport vector: r_a = 1 / (2 + d), r_b = 1 - r_a.
    d = 0.85
    rank = pagerank(["a", "b"], {"a": {"b": 3.0, "gone": 5.0}}, damping=d, tolerance=1e-12)
    assert rank["a"] == pytest.approx(1 / (2 + d)) and rank["b"] == pytest.approx(1 - 1 / (2 + d))
    # a links to b twice as strongly as to c: b gets twice c's share of a.
    rank = pagerank(["a", "b", "c"], {"a": {"b": 2.0, "c": 1.0}}, tolerance=1e-12)
    assert rank["b"] - rank["c"] == pytest.approx(d * rank["a"] / 3)


def _reference_pagerank(nodes, edges, personalization, d=0.85):  # type: ignore[no-untyped-def]
    """Textbook power iteration, every node one by one (what pagerank computes)."""
    weights = {n: max((personalization or {}).get(n, 0.0), 0.0) for n in nodes}
    total = sum(weights.values())
    jump = {n: (weights[n] / total if total > 0 else 1 / len(nodes)) for n in nodes}
    out = {s: {t: w for t, w in row.items() if t in jump} for s, row in edges.items()}
    out = {s: row for s, row in out.items() if s in jump and sum(row.values()) > 0}
    rank = dict(jump)
    for _ in range(500):
        held = sum(rank[n] for n in nodes if n not in out)
        new = {n: (1 - d + d * held) * jump[n] for n in nodes}
        for s, row in out.items():
            for t, w in row.items():
                new[t] += d * rank[s] * w / sum(row.values())
        rank = new
    return rank


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.dictionaries(
                st.integers(0, n),
                st.dictionaries(st.integers(0, n), st.floats(0.1, 5.0)),
                max_size=n,
            ),
            st.dictionaries(st.integers(0, n - 1), st.floats(0.0, 3.0), max_size=3),
        )
    )
)
def test_pagerank_with_files_linked_to_nothing_equals_the_textbook_iteration(case) -> None:  # type: ignore[no-untyped-def]
    """Files with no link in or out (test data, docs: most of some repositories) are
    summed as one number in each round; every file's rank is what iterating each gives.
    Node n (one past the last) stands for a link to a file that is not indexed."""
    n, links, focus = case
    nodes = [f"f{i}" for i in range(n)]
    edges = {f"f{s}": {f"f{t}": w for t, w in row.items()} for s, row in links.items()}
    personalization = {f"f{i}": w for i, w in focus.items()} or None
    rank = pagerank(nodes, edges, personalization, tolerance=1e-13, iterations=500)
    expected = _reference_pagerank(nodes, edges, personalization)
    assert rank == pytest.approx(expected, abs=1e-9)
    assert sum(rank.values()) == pytest.approx(1.0)


def test_a_task_in_plain_words_still_leads_the_map_with_its_files(shop: Path) -> None:
    text = repo_map(shop, 60, task="the shipping cost is wrong for big carts")
    assert text.splitlines()[0] == "shop/shipping.py:"


def test_multi_line_signatures_read_as_one_line(tmp_path: Path) -> None:
    from conftest import make_repo

    source = (
        "def pick(\n    rng,  # the random source\n    size: int = 3,\n) -> int:\n    return 1\n"
    )
    repo = make_repo(tmp_path / "sig", {"pick.py": source})
    assert "def pick(rng, size: int = 3) -> int" in repo_map(repo, 100)
