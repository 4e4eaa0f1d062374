"""Blast radius on a real repository: importers of a change and the tests to run first."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.context import blast_radius
from test_context_sample import shop_repo

from conftest import make_repo


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop_repo(tmp_path_factory.mktemp("blast") / "shop")


def test_importers_of_a_change_are_found_transitively_nearest_first(shop: Path) -> None:
    radius = blast_radius(shop, ["shop/pricing.py"], state_dir=shop / ".selfforge")
    assert radius.modules[0] == "shop/cart.py"
    assert radius.modules.index("shop/shipping.py") < radius.modules.index("shop/report.py")
    assert "shop/inventory.py" not in radius.modules


def test_tests_that_import_the_change_or_its_importers_are_found(shop: Path) -> None:
    radius = blast_radius(shop, ["shop/pricing.py"], state_dir=shop / ".selfforge")
    assert radius.tests[:2] == ["tests/test_pricing.py", "tests/test_cart.py"]
    assert "tests/test_inventory.py" not in radius.tests


def test_a_test_named_after_the_module_is_found_without_an_import(shop: Path) -> None:
    radius = blast_radius(shop, ["shop/inventory.py"], state_dir=shop / ".selfforge")
    assert radius.tests == ["tests/test_inventory.py"]
    assert radius.modules == []


def test_a_changed_test_is_its_own_blast_radius(shop: Path) -> None:
    radius = blast_radius(shop, ["tests/test_cart.py"], state_dir=shop / ".selfforge")
    assert radius.tests == ["tests/test_cart.py"]


def test_an_uncommitted_new_importer_counts(shop: Path, tmp_path: Path) -> None:
    repo = shop_repo(tmp_path / "shop2")
    (repo / "shop/coupons.py").write_text("from shop.pricing import apply_discount\n")
    (repo / "tests/test_coupons.py").write_text("import shop.coupons\n")
    radius = blast_radius(repo, ["shop/pricing.py"], state_dir=repo / ".selfforge")
    assert "shop/coupons.py" in radius.modules
    assert "tests/test_coupons.py" in radius.tests


def test_a_test_using_a_modules_names_without_importing_it_is_found(tmp_path: Path) -> None:
    repo = shop_repo(tmp_path / "shop3")
    (repo / "tests/test_checkout.py").write_text(
        "import importlib\n\n\ndef test_free_over_fifty(cart):\n"
        '    shipping = importlib.import_module("shop.shipping")\n'
        "    assert shipping.shipping_cost(cart) == 0.0\n"
    )
    radius = blast_radius(repo, ["shop/shipping.py"], state_dir=repo / ".selfforge")
    assert "tests/test_checkout.py" in radius.tests
    assert "tests/test_inventory.py" not in radius.tests


def test_javascript_tests_are_found_by_their_names(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "js",
        {
            "src/cart.js": "export function total() { return 0; }\n",
            "src/cart.test.js": "test('total', () => {});\n",
            "src/__tests__/cart.spec.ts": "it('works', () => {});\n",
            "src/price.test.js": "test('price', () => {});\n",
        },
    )
    radius = blast_radius(repo, ["src/cart.js"], state_dir=repo / ".selfforge")
    assert sorted(radius.tests) == ["src/__tests__/cart.spec.ts", "src/cart.test.js"]
