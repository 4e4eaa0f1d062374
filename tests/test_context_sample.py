"""A small shop project shared by the context tests, and a check that it indexes."""

from __future__ import annotations

from pathlib import Path

from selfforge.context.index import open_index

from conftest import make_repo

SHOP: dict[str, str] = {
    "README.md": "# shop\n\nA tiny shop.\n",
    "shop/__init__.py": '"""A tiny shop."""\n',
    "shop/pricing.py": '''"""Prices, discounts and taxes."""


def apply_discount(price: float, percent: float) -> float:
    """Price after a percentage discount."""
    return round(price * (1 - percent / 100), 2)


def tax_for(region: str) -> float:
    """Sales tax rate of a region."""
    return {"eu": 0.2, "us": 0.07}.get(region, 0.0)


class PriceBook:
    """Known prices by SKU."""

    def price(self, sku: str) -> float:
        return 9.99
''',
    "shop/cart.py": '''"""The shopping cart."""

from shop.pricing import PriceBook, apply_discount


class Cart:
    """Items a customer intends to buy."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def total(self, percent: float = 0.0) -> float:
        """Sum of the item prices after the discount."""
        book = PriceBook()
        return apply_discount(sum(book.price(s) for s in self.items), percent)
''',
    "shop/inventory.py": '''"""Stock levels."""


class Stock:
    """Units on hand per SKU."""

    def reserve(self, sku: str, quantity: int) -> bool:
        """Hold units for an order so no one else can buy them."""
        return quantity > 0
''',
    "shop/shipping.py": '''"""Shipping costs."""

from .cart import Cart


def shipping_cost(cart: Cart) -> float:
    """Flat rate below fifty, free above."""
    return 0.0 if cart.total() > 50 else 4.95
''',
    "shop/report.py": '''"""Daily sales report."""

from shop import shipping


def daily_report() -> str:
    return "report"
''',
    "tests/test_pricing.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "def test_discount():\n    assert apply_discount(100, 10) == 90\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\ndef test_empty():\n    assert Cart().total() == 0\n"
    ),
    "tests/test_inventory.py": (
        "import importlib\n\n\ndef test_reserve():\n"
        '    stock = importlib.import_module("shop.inventory").Stock()\n'
        '    assert stock.reserve("a", 1)\n'
    ),
}
# Filler modules so ranking has something to rank against.
for _i in range(12):
    SHOP[f"shop/util{_i}.py"] = (
        f'"""Helpers batch {_i}."""\n\n\n'
        f"def helper_{_i}(value: int) -> int:\n"
        f'    """Return value plus {_i}."""\n    return value + {_i}\n'
    )


def shop_repo(root: Path) -> Path:
    return make_repo(root, SHOP)


def test_sample_project_indexes(tmp_path: Path) -> None:
    repo = shop_repo(tmp_path / "shop")
    index = open_index(repo / ".selfforge")
    stats = index.update(repo)
    assert stats.files == len(SHOP)
    assert {"apply_discount", "Cart", "Stock", "shipping_cost"} <= {
        d.name for d in index.definitions()
    }
