"""Bench shapes found on Rust and TypeScript histories nobody measured before (issue 41's
done-when, the bench's shape), each built from the real commit's shape and mined or
replayed through `bench mine` / `bench run` as the real commit was."""

from __future__ import annotations

from pathlib import Path

from conftest import cli, git, make_repo, needs_cargo

# --- a commit that moves its test module behind a Cargo feature it adds -------------------
# sfackler/rust-fallible-iterator 5bc90bd ("Refactor: tidy up imports and features"):
# Cargo.toml's `std` feature becomes `alloc`, `#[cfg(feature = "std")] #[cfg(test)] mod
# test;` becomes `#[cfg(all(test, feature = "alloc"))] mod test;`, and src/test.rs now
# imports `alloc::vec`. Its tests fail on the parent and pass on the commit, but only
# with the commit's Cargo.toml, which the gold (the code files) does not carry: replayed,
# the gold left the test module out of the build, and was refused.

FEAT_TOML = '[package]\nname = "feat"\nversion = "0.1.0"\nedition = "2018"\n\n[features]\n'
FEAT_LIB = """#![no_std]
//! Sums.

#[cfg(feature = "std")]
extern crate std;

/// The sum of `xs`.
pub fn total(xs: &[u32]) -> u32 {
    xs.iter().sum()
}

#[cfg(feature = "std")]
#[cfg(test)]
mod test;
"""
FEAT_TEST = """use super::*;

#[test]
fn sums() {
    assert_eq!(total(&[1, 2]), 3);
}
"""


@needs_cargo
def test_a_commit_that_changes_cargo_toml_is_not_mined_without_it(tmp_path: Path) -> None:
    """The commit's tests ran with its new Cargo feature; the gold, its code files only,
    cannot carry it: mining leaves the commit out and says why, instead of an instance
    whose gold builds without the tests it names."""
    files = {
        "Cargo.toml": FEAT_TOML + 'std = []\ndefault = ["std"]\n',
        ".gitignore": "target/\nCargo.lock\n",
        "src/lib.rs": FEAT_LIB,
        "src/test.rs": FEAT_TEST,
    }
    repo = make_repo(tmp_path / "feat", files)
    (repo / "Cargo.toml").write_text(FEAT_TOML + 'default = ["alloc"]\nalloc = []\n')
    lib = FEAT_LIB.replace('feature = "std")]\nextern crate std', 'feature = "alloc")]\n'
                           "extern crate alloc")  # fmt: skip
    lib = lib.replace(
        '#[cfg(feature = "std")]\n#[cfg(test)]', '#[cfg(all(test, feature = "alloc"))]'
    )
    (repo / "src/lib.rs").write_text(lib)
    (repo / "src/test.rs").write_text(
        FEAT_TEST.replace("use super::*;", "use alloc::vec;\nuse super::*;").replace(
            "&[1, 2]", "&vec![1, 2]"
        )
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Refactor: tidy up imports and features")
    out = tmp_path / "feat.jsonl"
    proc = cli("bench", "mine", "--repo", str(repo), "--out", str(out))
    said = proc.stdout + proc.stderr
    assert "1  change a build manifest the gold cannot carry" in said, said
    assert not out.exists() or not out.read_text().strip(), out.read_text()
