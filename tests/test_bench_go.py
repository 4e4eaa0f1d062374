"""`bench mine` and `bench run` on a Go history built in the test, with the real go
toolchain: the commit that adds a function with its test is mined (ids from the go
runner), its gold change lands, and its planted bug (a mutation that still builds) and
an incomplete version are rejected."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from test_runner_go import GO_MOD

from conftest import (
    assert_every_kind_but_order_rejected,
    cli,
    git,
    make_repo,
    replay_every_kind,
)

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")

SHOP = """package shop

func Total(prices []int) int {
	sum := 0
	for _, p := range prices {
		sum += p
	}
	return sum
}
"""
SHOP_TEST = """package shop

import "testing"

func TestTotal(t *testing.T) {
	if Total([]int{1, 2, 3}) != 6 {
		t.Fatal("total")
	}
}
"""
DISCOUNT = """
func Discount(price, pct int) int {
	if pct > 100 {
		return 0
	}
	return price * (100 - pct) / 100
}
"""
TAX = """
func Tax(price int) int {
	return price / 4
}
"""
DISCOUNT_TEST = """
func TestDiscount(t *testing.T) {
	if Discount(200, 25) != 150 || Discount(10, 200) != 0 {
		t.Fatal("discount")
	}
}

func TestTax(t *testing.T) {
	if Tax(100) != 25 {
		t.Fatal("tax")
	}
}
"""


@pytest.fixture
def go_history(tmp_path: Path) -> Path:
    rest = "\n" + "".join(
        f"// the rest of the shop, part {n}\n" for n in range(12)
    )  # the two functions: two hunks
    repo = make_repo(
        tmp_path / "shop", {"go.mod": GO_MOD, "shop.go": SHOP + rest, "shop_test.go": SHOP_TEST}
    )
    (repo / "shop.go").write_text(SHOP + DISCOUNT + rest + TAX)
    (repo / "shop_test.go").write_text(SHOP_TEST + DISCOUNT_TEST)
    git(repo, "commit", "-qam", "Add Discount and Tax")
    return repo


def test_a_go_history_is_mined_and_replayed(go_history: Path, tmp_path: Path) -> None:
    instances = tmp_path / "go.jsonl"
    cli("bench", "mine", "--repo", str(go_history), "--out", str(instances), check=True)
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert inst["test_cmd"] == "go test ./..."
    # The new tests name functions the parent lacks: the whole package failed to build
    # before, so every test in it goes from failing to passing (ids from the go runner).
    assert set(inst["fail_to_pass"]) == {
        f"example.com/mathx::{name}" for name in ("TestDiscount", "TestTax", "TestTotal")
    }
    assert inst["negative_patch"], "a mutation that builds and breaks a test was planted"
    rows = replay_every_kind(instances, tmp_path)
    assert rows["gold"]["landed"] and rows["gold"]["error"] is None, rows["gold"]
    assert_every_kind_but_order_rejected(rows)
