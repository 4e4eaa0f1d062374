"""`bench mine` and `bench run` on a Rust history built in the test, with the real cargo:
a commit that adds a function and its unit test inside the same file (`#[cfg(test)] mod
tests`, where most Rust tests live) is split into the tests (committed first) and the
code (the gold change); the gold lands, its planted bug and an incomplete version are
rejected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfforge.bench.rust_split import split_doc_examples, split_inline

from conftest import (
    assert_every_kind_but_order_rejected,
    cli,
    git,
    make_repo,
    needs_cargo,
    replay_every_kind,
)

pytestmark = needs_cargo

CARGO_TOML = '[package]\nname = "shop"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'

LIB = (
    """pub fn total(prices: &[i64]) -> i64 {
    prices.iter().sum()
}
"""
    + "".join(f"// the rest of the shop, part {n}\n" for n in range(12))
    + """

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals() {
        assert_eq!(total(&[1, 2, 3]), 6);
    }
}
"""
)

DISCOUNT = """
pub fn discount(price: i64, pct: i64) -> i64 {
    if pct > 100 {
        return 0;
    }
    price * (100 - pct) / 100
}
"""

TAX = """
pub fn tax(price: i64) -> i64 {
    price / 4
}
"""

NEW_TESTS = """
    #[test]
    fn discounts() {
        assert_eq!(discount(200, 25), 150);
        assert_eq!(discount(10, 200), 0);
    }

    #[test]
    fn taxes() {
        assert_eq!(tax(100), 25);
    }
}
"""


def with_feature() -> str:
    code, tests = LIB.split("\n#[cfg(test)]")
    code = TAX.lstrip("\n") + "\n" + code + DISCOUNT  # two hunks, far apart
    return code + "\n#[cfg(test)]" + tests.rstrip().removesuffix("}") + NEW_TESTS.lstrip("\n")


def test_inline_tests_are_split_from_the_code_they_test() -> None:
    first = split_inline(LIB, with_feature())
    assert first is not None
    assert "fn discounts()" in first and "fn taxes()" in first  # the commit's tests
    assert "pub fn discount" not in first and "pub fn tax" not in first  # the parent's code
    assert first.startswith(LIB.split("#[cfg(test)]")[0])
    assert split_inline(LIB, LIB.replace("prices.iter()", "prices.iter().copied()")) is None


DOCUMENTED = """/// Sums the prices.
///
/// ```
/// assert_eq!(shop::total(&[1, 2]), 3);
/// ```
pub fn total(prices: &[i64]) -> i64 {
    prices.iter().sum()
}
"""


def test_a_doc_example_change_goes_with_the_tests_and_the_rest_with_the_code() -> None:
    """A doc example is a test cargo runs: deleting or changing one is part of the tests
    (committed first), while the commit's prose and code stay in the gold change."""
    commit = DOCUMENTED.replace("/// Sums the prices.", "/// Adds up the prices.")
    commit = commit.replace("/// assert_eq!(shop::total(&[1, 2]), 3);\n", "/// let _ = 1;\n")
    commit = commit.replace("prices.iter().sum()", "prices.iter().copied().sum()")
    first = split_doc_examples(DOCUMENTED, commit)
    assert "/// let _ = 1;" in first and "shop::total(&[1, 2])" not in first  # the example
    assert "/// Sums the prices." in first  # the prose stays the parent's
    assert "prices.iter().sum()" in first  # and so does the code
    deleted = "".join(
        line
        for line in DOCUMENTED.splitlines(keepends=True)
        if "```" not in line and "assert" not in line
    )
    assert "```" not in split_doc_examples(DOCUMENTED, deleted)  # a deleted example
    unchanged_docs = DOCUMENTED.replace("prices.iter().sum()", "prices.iter().copied().sum()")
    assert split_doc_examples(DOCUMENTED, unchanged_docs) == DOCUMENTED


@pytest.mark.slow  # cargo builds the crate for each mining run
def test_a_commit_that_leaves_tests_failing_in_a_crate_that_did_not_build_is_not_mined(
    tmp_path: Path,
) -> None:
    """The tests-first state does not build (the tests call a function the commit adds),
    and the commit's own code leaves one of its new tests failing. No judge may land that
    (with no base outcome, any failure there could be the change's), so it is no task."""
    repo = make_repo(
        tmp_path / "shop",
        {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, ".gitignore": "target/\nCargo.lock\n"},
    )
    clamp = "\npub fn clamp(x: i64) -> i64 {\n    x.max(0)\n}\n"
    clamp_test = "\n    #[test]\n    fn clamps() {\n        assert_eq!(clamp(-3), 0);\n    }\n}\n"
    code, tests = LIB.split("\n#[cfg(test)]")
    tests = tests.rstrip().removesuffix("}") + clamp_test.lstrip("\n")
    (repo / "src/lib.rs").write_text(code + clamp + "\n#[cfg(test)]" + tests)
    git(repo, "commit", "-qam", "Add clamp")
    broken = with_feature().replace("price / 4", "price / 5")
    (repo / "src/lib.rs").write_text(broken.replace("\n#[cfg(test)]", clamp + "\n#[cfg(test)]", 1))
    git(repo, "commit", "-qam", "Add discount and tax (tax is wrong)")
    instances = tmp_path / "rust.jsonl"
    cli("bench", "mine", "--repo", str(repo), "--out", str(instances), check=True)
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert inst["message"] == "Add clamp", inst["message"]
    assert "src/lib.rs::tests::clamps" in inst["fail_to_pass"]


@pytest.mark.slow  # cargo builds the crate for every replay
def test_a_rust_history_with_inline_tests_is_mined_and_replayed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "shop", {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB})
    (repo / ".gitignore").write_text("target/\nCargo.lock\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "Ignore the build")
    (repo / "src/lib.rs").write_text(with_feature())
    git(repo, "commit", "-qam", "Add discount and tax")
    instances = tmp_path / "rust.jsonl"
    cli("bench", "mine", "--repo", str(repo), "--out", str(instances), check=True)
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert inst["test_cmd"].startswith("cargo test")
    assert inst["test_files"] == ["src/lib.rs"] and inst["code_files"] == ["src/lib.rs"]
    # The tests come first (and fail to build on the parent's code); the gold is the code.
    assert "+    fn discounts()" in inst["test_patch"] and "pub fn" not in inst["test_patch"]
    assert "+pub fn discount" in inst["code_patch"] and "fn discounts" not in inst["code_patch"]
    assert "src/lib.rs::tests::discounts" in inst["fail_to_pass"]
    assert inst["negative_patch"], "a mutation that builds and breaks a test was planted"
    rows = replay_every_kind(instances, tmp_path)
    gold = rows["gold"]
    assert gold["landed"] and gold["solved"] and gold["error"] is None, gold
    assert_every_kind_but_order_rejected(rows)


@pytest.mark.slow  # cargo builds the crate for mining and the replay
def test_a_commit_with_only_inline_tests_keeps_every_code_file_in_its_gold(
    tmp_path: Path,
) -> None:
    """The commit renames a function in src/util.rs and its callers in src/lib.rs, whose
    inline test follows: its tests are inline only, and the gold must hold both files'
    code (the tests-first state is the parent's code with the new test)."""
    util = "pub fn old_name(x: i64) -> i64 {\n    x + 1\n}\n"
    lib = LIB.replace(
        "pub fn total",
        "pub mod util;\n\npub fn bump(x: i64) -> i64 {\n    util::old_name(x)\n}\n\npub fn total",
    )
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": lib, "src/util.rs": util}
    repo = make_repo(tmp_path / "shop", {**files, ".gitignore": "target/\nCargo.lock\n"})
    (repo / "src/util.rs").write_text(util.replace("old_name", "next"))
    test = "\n    #[test]\n    fn nexts() {\n        assert_eq!(util::next(1), 2);\n    }\n}\n"
    code, tests = lib.replace("util::old_name", "util::next").split("\n#[cfg(test)]")
    (repo / "src/lib.rs").write_text(
        code + "\n#[cfg(test)]" + tests.rstrip().removesuffix("}") + test.lstrip("\n")
    )
    git(repo, "commit", "-qam", "Rename old_name to next")
    instances = tmp_path / "rust.jsonl"
    cli("bench", "mine", "--repo", str(repo), "--out", str(instances), "--mutations", "0",
        check=True)  # fmt: skip
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert "diff --git a/src/util.rs" in inst["code_patch"], inst["code_patch"]
    assert "+    util::next(x)" in inst["code_patch"]
    results = tmp_path / "results.jsonl"
    cli("bench", "run", "--instances", str(instances), "--gold", "--results", str(results),
        "--work-dir", str(tmp_path / "work"), check=True)  # fmt: skip
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["landed"] and row["solved"], row


@pytest.mark.slow  # cargo builds the crate for each mining run
def test_a_test_binary_that_crashed_before_lends_no_unreported_test_to_fail_to_pass(
    tmp_path: Path,
) -> None:
    """The tests-first state overflows the stack in one test: the binary dies and the
    tests it had not reported yet are unknown, not failing. Mining must not call them
    FAIL_TO_PASS (a replay would find them passing before any change)."""
    broken = "pub fn depth(n: u64) -> u64 {\n    1 + depth(n)\n}\n"
    fixed = "pub fn depth(n: u64) -> u64 {\n    if n == 0 { 0 } else { 1 + depth(n - 1) }\n}\n"
    many = "".join(
        f"#[test]\nfn t{n}() {{\n    assert_eq!(shop::depth(0) * 0, 0);\n}}\n" for n in range(30)
    )
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": broken, ".gitignore": "target/\nCargo.lock\n"}
    repo = make_repo(tmp_path / "shop", files)
    (repo / "src/lib.rs").write_text(fixed)
    (repo / "tests").mkdir()
    (repo / "tests/it.rs").write_text(
        many + "#[test]\nfn deep() {\n    assert_eq!(shop::depth(3), 3);\n}\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Stop depth() from recursing forever")
    instances = tmp_path / "rust.jsonl"
    cli("bench", "mine", "--repo", str(repo), "--out", str(instances), check=True)
    for line in instances.read_text().splitlines():
        inst = json.loads(line)
        assert not [t for t in inst["fail_to_pass"] if t.startswith("tests/it.rs::t")], inst
