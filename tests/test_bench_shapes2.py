"""Bench shapes found on Rust and TypeScript histories nobody measured before (issue 41's
done-when, the bench's shape), each built from the real commit's shape and mined or
replayed through `bench mine` / `bench run` as the real commit was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli, git, make_repo, needs_cargo

# --- a commit that moves its test module behind a Cargo feature it adds -------------------
# sfackler/rust-fallible-iterator 5bc90bd ("Refactor: tidy up imports and features"):
# Cargo.toml's `std` feature becomes `alloc`, `#[cfg(feature = "std")] #[cfg(test)] mod
# test;` becomes `#[cfg(all(test, feature = "alloc"))] mod test;`, and src/test.rs now
# imports `alloc::vec`. Its tests fail on the parent and pass on the commit, but only
# with the commit's Cargo.toml, which the gold (the code files) does not carry: replayed,
# the gold left the test module out of the build, and was refused. The commits after it
# (577f243 "add sum and product") add methods their tests call: on the parent, with their
# tests, rustc's errors are in src/test.rs only, a module declared `#[cfg(all(test,
# feature = "alloc"))]`, which mining read as the crate not compiling (3 commits lost).

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


MEAN = """
/// The mean of `xs`, none for no numbers.
pub fn mean(xs: &[u32]) -> Option<u32> {
    if xs.is_empty() {
        return None;
    }
    Some(total(xs) / xs.len() as u32)
}
"""
MEAN_TEST = """
#[test]
fn means() {
    assert_eq!(mean(&vec![1, 3]), Some(2));
    assert_eq!(mean(&[]), None);
}
"""


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for the second commit's mining
def test_a_feature_gated_test_module_and_the_manifest_that_gates_it(tmp_path: Path) -> None:
    """The commit that changes Cargo.toml is left out, saying why (its tests ran with a
    feature the gold cannot carry); the next commit, whose tests in the feature-gated
    `#[cfg(all(test, feature = "alloc"))] mod test;` call the function it adds, is an
    instance: a compile error there is the tests', not the crate's."""
    files = {
        "Cargo.toml": FEAT_TOML + 'std = []\ndefault = ["std"]\n',
        ".gitignore": "target/\nCargo.lock\n",
        "src/lib.rs": FEAT_LIB,
        "src/test.rs": FEAT_TEST,
    }
    repo = make_repo(tmp_path / "feat", files)
    (repo / "Cargo.toml").write_text(FEAT_TOML + 'default = ["alloc"]\nalloc = []\n')
    lib = FEAT_LIB.replace('"std")]\nextern crate std', '"alloc")]\nextern crate alloc')
    lib = lib.replace(
        '#[cfg(feature = "std")]\n#[cfg(test)]', '#[cfg(all(test, feature = "alloc"))]'
    )
    test = FEAT_TEST.replace("use super::*;", "use alloc::vec;\nuse super::*;")
    (repo / "src/lib.rs").write_text(lib)
    (repo / "src/test.rs").write_text(test.replace("&[1, 2]", "&vec![1, 2]"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Refactor: tidy up imports and features")
    (repo / "src/lib.rs").write_text(lib.replace("\n#[cfg(all(test", MEAN + "\n#[cfg(all(test"))
    (repo / "src/test.rs").write_text(test.replace("&[1, 2]", "&vec![1, 2]") + MEAN_TEST)
    git(repo, "commit", "-qam", "add mean")
    out = tmp_path / "feat.jsonl"
    proc = cli("bench", "mine", "--repo", str(repo), "--out", str(out), "--mutations", "0")
    said = proc.stdout + proc.stderr
    assert "1  change a build manifest the gold cannot carry" in said, said
    (inst,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert inst["message"] == "add mean" and inst["test_files"] == ["src/test.rs"], inst
    assert "src/lib.rs::test::means" in inst["fail_to_pass"], inst["fail_to_pass"]


# --- a gold hunk whose context repeats in the file ----------------------------------------
# sfackler/rust-fallible-iterator a7c1a8b ("add convenient wrapper for std::iter::Iterator")
# ends src/lib.rs without its final newline: the last hunk's context, `size_hint`
# returning `(0, Some(0))` and the closing brace, is the same in three iterator impls (lines
# 2696, 2755 and 2803), and the gold was refused as "edits did not apply". Its header
# states where it is, as `git apply` reads it.

ERR_IMPL = """impl<T, E: Clone> FallibleIterator for {name}<T, E> {{
    type Item = T;
    type Error = E;

    #[inline]
    fn next(&mut self) -> Result<Option<T>, E> {{
        Err(self.0.clone())
    }}

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {{
        (0, Some(0))
    }}
}}
"""
LAST_HUNK = "\n".join(
    [
        "diff --git a/src/lib.rs b/src/lib.rs",
        "--- a/src/lib.rs",
        "+++ b/src/lib.rs",
        "@@ -39,6 +39,6 @@ impl<T, E: Clone> FallibleIterator for RepeatErr<T, E> {",
        " ",  # a blank context line, as git writes it
        "     #[inline]",
        "     fn size_hint(&self) -> (usize, Option<usize>) {",
        "         (0, Some(0))",
        "     }",
        "-}",
        "\\ No newline at end of file",
        "+}",
        "",
    ]
)


def test_a_hunk_whose_context_repeats_applies_where_its_header_says(tmp_path: Path) -> None:
    """The place the header states settles the tie; a header that states none of the
    places leaves the hunk ambiguous, as before (nothing is guessed)."""
    lib = "\n".join(ERR_IMPL.format(name=n) for n in ("Empty", "OnceErr", "RepeatErr"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src/lib.rs").write_text(lib.rstrip("\n"))
    reply = tmp_path / "reply.diff"
    args = ("apply-edits", "--root", str(tmp_path), "--format", "udiff", "--file", str(reply))
    reply.write_text(LAST_HUNK.replace("+39,6", "+30,6"))
    proc = cli(*args)
    assert proc.returncode == 1 and "matches 3 places" in proc.stdout + proc.stderr, proc
    reply.write_text(LAST_HUNK)
    proc = cli(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # (the final newline the hunk adds is not written: left alone, it changes no build)
    assert (tmp_path / "src/lib.rs").read_text().rstrip("\n") == lib.rstrip("\n")


# --- an infra negative whose file the project ignores --------------------------------------
# unjs/scule's .gitignore holds `*.conf*`, which takes vitest.config.ts: the `infra`
# negative's config file stayed out of its diff and, left in the clone by the reset
# (`git clean` keeps ignored files), made the baseline's own run select no test — 4 jobs
# of 4 ended in "the instance does not reproduce here" instead of a verdict. Staged by
# force, it landed instead: a run stages only what git tracks, so the judged change was
# the gold's code without it.


def test_an_infra_file_the_project_ignores_is_not_drawn(tmp_path: Path) -> None:
    """No change can add an ignored file: the kind is not drawn, and the clone is left
    as it was (nothing of the negative steers the baseline's run)."""
    from selfforge.bench import negatives
    from selfforge.bench.records import Instance

    package = {"name": "cases", "type": "module", "devDependencies": {"vitest": "^1.5.3"}}
    files = {
        "package.json": json.dumps(package),
        ".gitignore": "node_modules\ncoverage\n*.conf*\n",
        "src/index.ts": "export const upper = (s: string) => s.toUpperCase();\n",
        "test/scule.test.ts": "import { upper } from '../src';\n",
    }
    repo = make_repo(tmp_path / "cases", files)
    inst = Instance(
        instance_id="cases-1", repo=str(repo), commit="0" * 40, parent="0" * 40,
        message="feat", test_files=["test/scule.test.ts"], test_targets=[],
        code_files=["src/index.ts"], test_patch="", code_patch="",
        fail_to_pass=["test/scule.test.ts::upper > a => A"], pass_to_pass=[],
        test_cmd="npx vitest run --no-cache --reporter=junit --outputFile=.selfforge-junit.xml",
        test_time_s=1.0, runner="junit", junit=".selfforge-junit.xml",
    )  # fmt: skip
    with pytest.raises(negatives.NotDrawn, match=r"vitest\.config\.ts is ignored"):
        negatives.draw("infra", repo, inst, lambda: True)
    assert not (repo / "vitest.config.ts").exists()
    assert git(repo, "status", "--porcelain", "--ignored") == ""
