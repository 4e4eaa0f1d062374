"""A small real history for the bench's negatives and leakage tests: a commit that adds
a function and guards another (two hunks far apart), with tests, and a later one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import IDENTITY

SHOP = '''\
def total(prices):
    return sum(prices)


def discount(price, pct):
    return price * (100 - pct) / 100


def describe(prices):
    """A line for the receipt."""
    count = len(prices)
    if count == 0:
        return "nothing"
    if count == 1:
        return "one item"
    return f"{count} items"
'''

TEST_SHOP = """\
from shop import describe, discount, total


def test_total():
    assert total([1, 2, 3]) == 6


def test_discount():
    assert discount(200, 25) == 150


def test_describe():
    assert describe([1, 2]) == "2 items"
"""

GUARD = "    if pct > 100:\n        raise ValueError(pct)\n"
TAX = '''

def tax(price, rate):
    """The tax on a price at a rate."""
    return price * rate
'''

TEST_TAX = """

def test_tax():
    from shop import tax

    assert tax(100, 0.25) == 25.0


def test_too_much_discount():
    import pytest

    with pytest.raises(ValueError):
        discount(10, 150)
"""

ROUND = '''

def rounded(value):
    """Rounded to cents, for the receipt."""
    return round(value + 0.0000001, 2)
'''

TEST_ROUND = """

def test_rounded():
    from shop import rounded

    assert rounded(2.675) == 2.68
"""


def commit(root: Path, message: str, when: int) -> str:
    """A commit at a fixed date: the same history has the same shas on every run."""
    date = f"{1_700_000_000 + when} +0000"
    env = {**os.environ, **IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    for args in (["add", "-A"], ["commit", "-q", "-m", message], ["tag", f"v0.{when}"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def build(root: Path) -> dict[str, str]:
    """The history: initial, tax (the instance), rounded (a later one). Returns the shas."""
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "tests").mkdir()
    (root / "shop.py").write_text(SHOP)
    (root / "tests" / "test_shop.py").write_text(TEST_SHOP)
    (root / "bench").mkdir()  # a folder named like the replay's branch: names stay unambiguous
    (root / "bench" / "prices.txt").write_text("1 2 3\n")
    base = commit(root, "A shop: totals, discounts, a receipt line", 1)
    shop = root / "shop.py"
    shop.write_text(shop.read_text().replace("    return price *", GUARD + "    return price *"))
    shop.write_text(shop.read_text() + TAX)
    tests = root / "tests" / "test_shop.py"
    tests.write_text(tests.read_text() + TEST_TAX)
    tax = commit(root, "Add tax(price, rate); refuse a discount over 100%", 2)
    shop.write_text(shop.read_text() + ROUND)
    tests.write_text(tests.read_text() + TEST_ROUND)
    later = commit(root, "Add rounded(value)", 3)
    return {"base": base, "tax": tax, "later": later}
