"""Choosing files for a task on a real (small) repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.context.build import map_for_task
from selfforge.context.retrieval import is_test_path
from test_context_sample import shop_repo


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop_repo(tmp_path_factory.mktemp("retrieval") / "shop")


def chosen(repo: Path, task: str) -> list[str]:
    return map_for_task(repo, state_dir=repo / ".selfforge", token_budget=500, task=task).files


def test_a_task_naming_a_symbol_finds_the_file_that_defines_it(shop: Path) -> None:
    assert chosen(shop, "apply_discount rounds 33 percent wrongly")[0] == "shop/pricing.py"


def test_a_class_name_in_a_task_finds_its_module(shop: Path) -> None:
    assert chosen(shop, "Stock should refuse negative quantities")[0] == "shop/inventory.py"


def test_docstring_words_find_a_file_without_any_name(shop: Path) -> None:
    files = chosen(shop, "Hold units for an order: refuse when none are on hand")
    assert files[0] == "shop/inventory.py"


def test_split_identifier_words_match(shop: Path) -> None:
    assert chosen(shop, "the shipping cost is wrong for big carts")[0] == "shop/shipping.py"


def test_graph_neighbours_of_the_hit_are_chosen_too(shop: Path) -> None:
    files = chosen(shop, "apply_discount rounds 33 percent wrongly")
    assert "shop/cart.py" in files[:5]
    assert "tests/test_pricing.py" in files[:5]


def test_a_task_naming_a_file_puts_it_first(shop: Path) -> None:
    assert chosen(shop, "tidy report.py")[0] == "shop/report.py"


def test_a_task_with_no_usable_words_chooses_nothing(shop: Path) -> None:
    assert chosen(shop, "?? !!") == []


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/test_a.py", True),
        ("pkg/a_test.py", True),
        ("test_b.py", True),
        ("pkg/tests/helpers.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
    ],
)
def test_test_paths_follow_the_usual_conventions(path: str, is_test: bool) -> None:
    assert is_test_path(path) is is_test
