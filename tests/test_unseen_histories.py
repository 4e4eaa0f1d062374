"""What unseen histories still got wrong (issue 33.8), each through the real CLI or the
real toolchain: a parameter id that embeds the time, a Rust task whose named tests the
base does not have, a doctest that follows its renamed item, a crate's `src/tests.rs`,
and cargo's selection of a doctest by name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, PYTEST, cli, directives, git, log_json, make_repo, needs_cargo

STAMPED = """\
from datetime import datetime

import pytest

from calc import add, sub


@pytest.mark.parametrize("when", [str(datetime.now())])
def test_sub_at(when):
    assert sub(5, 3) == 2


@pytest.mark.parametrize("when", [str(datetime.now())])
def test_add_at(when):
    assert add(2, 3) == 5
"""


def test_a_parameter_that_embeds_the_time_is_the_same_test_on_every_run(
    tmp_path: Path, script
) -> None:
    """Both ids change between the baseline's run and the candidate's: the passing one
    must not count as "no longer collected", and the named failing one (written with the
    time the task was written) must count as fixed."""
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": STAMPED},
        directives(PYTEST),
    )
    task = (
        "Fix add. The failing tests must pass: "
        "test_calc.py::test_add_at[2020-01-01 10:00:00.000001]"
    )
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), "--task", task)
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "accepted", (attempt["reason"], proc.stdout + proc.stderr)
    assert "a + b" in (repo / "calc.py").read_text()


def test_realign_maps_only_the_same_slot_of_the_same_function() -> None:
    from selfforge.judge.runners.results import realign

    then = ["t.py::f[1]", "t.py::f[2]", "t.py::g[a]"]
    assert realign(then, ["t.py::f[3]", "t.py::f[4]", "t.py::g[a]"]) == {
        "t.py::f[1]": "t.py::f[3]",
        "t.py::f[2]": "t.py::f[4]",
    }
    # a case removed (fewer ids) or an id the base already had: the same test is gone
    assert realign(then, ["t.py::f[2]", "t.py::g[a]"]) == {}
    assert realign(then, ["t.py::f[2]", "t.py::f[5]", "t.py::g[a]"]) == {}


CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }
}
"""
MUL = (
    "src/lib.rs\n<<<<<<< SEARCH\npub fn add(a: i32, b: i32) -> i32 {\n=======\n"
    "pub fn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n\n"
    "pub fn add(a: i32, b: i32) -> i32 {\n>>>>>>> REPLACE\n"
)
MUL_TEST = (
    "src/lib.rs\n<<<<<<< SEARCH\n    #[test]\n    fn adds() {\n=======\n"
    "    #[test]\n    fn multiplies() {\n        assert_eq!(mul(2, 3), 6);\n    }\n\n"
    "    #[test]\n    fn adds() {\n>>>>>>> REPLACE\n"
)
HELPER = "tests/common/mod.rs\n<<<<<<< SEARCH\n=======\npub fn helper() {}\n>>>>>>> REPLACE\n"
MUL_TASK = "Add mul(a, b). The failing tests must pass: src/lib.rs::tests::multiplies"


def _crate(tmp_path: Path, lib: str = LIB) -> Path:
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": lib, ".gitignore": "target/\n"}
    return make_repo(tmp_path / "repo", files, directives("cargo test --offline"))


def _run(repo: Path, spec: str, task: str) -> dict:
    proc = cli("run", "--repo", str(repo), "--model", spec, "--task", task)
    attempt = log_json(repo)[-1]
    attempt["out"] = proc.stdout + proc.stderr
    return attempt


@needs_cargo
@pytest.mark.slow  # cargo builds the crate three times
def test_a_rust_task_requires_the_tests_it_names_that_the_base_lacks(
    tmp_path: Path, script
) -> None:
    """No test fails on the base, and `multiplies` does not exist there: a change that
    leaves the test out is not the task done (it was judged "any change" and landed); one
    that adds it passing lands (the change's own suite shows it); one that also brings a
    test helper cannot claim that progress."""
    repo = _crate(tmp_path)
    attempt = _run(repo, script(propose=[MUL]), MUL_TASK)
    assert attempt["outcome"] == "rejected", attempt
    assert "not done" in attempt["reason"] and "not collected" in attempt["reason"]
    assert "multiplies" in attempt["reason"]

    attempt = _run(repo, script(propose=[MUL + HELPER + MUL_TEST]), MUL_TASK)
    assert attempt["outcome"] == "rejected", attempt
    assert "must not be fakeable" in attempt["reason"], attempt["reason"]

    attempt = _run(repo, script(propose=[MUL + MUL_TEST]), MUL_TASK)
    assert attempt["outcome"] == "accepted", attempt
    assert "fn multiplies" in (repo / "src/lib.rs").read_text()


def test_a_named_test_the_base_lacks_is_a_target() -> None:
    from selfforge.judge.criterion import for_task
    from selfforge.judge.runners.results import TestReport
    from selfforge.judge.verdict import Observed

    base = Observed(tests=TestReport(outcomes={"src/lib.rs::tests::adds": "passed"}))
    assert for_task(MUL_TASK, base).targets == ["src/lib.rs::tests::multiplies"]
    bare = for_task("Add mul; tests::multiplies must pass, tests::adds too", base)
    assert bare.every and bare.targets == ["tests::multiplies"]
    assert for_task("Add mul to the crate", base).kind == "change"


PAIR = """pub struct Pair<A, B>(pub A, pub B);

impl<A, B> Pair<A, B> {
    /// Swaps the two halves.
    ///
    /// ```
    /// let p = adder::Pair(1, "a").swap();
    /// assert_eq!(p.0, "a");
    /// ```
    pub fn swap(self) -> Pair<B, A> {
        Pair(self.1, self.0)
    }
}

pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }
}
"""
RENAME = (
    'src/lib.rs\n<<<<<<< SEARCH\n    /// let p = adder::Pair(1, "a").swap();\n=======\n'
    '    /// let p = adder::Pair(1, "a").flip();\n>>>>>>> REPLACE\n'
    "src/lib.rs\n<<<<<<< SEARCH\n    pub fn swap(self) -> Pair<B, A> {\n=======\n"
    "    pub fn flip(self) -> Pair<B, A> {\n>>>>>>> REPLACE\n"
)


@needs_cargo
def test_a_doctest_follows_the_item_the_change_renames(tmp_path: Path, script) -> None:
    """libtest names a doctest after its item: renaming swap to flip made the doctest "no
    longer collected" and the rename was refused."""
    repo = _crate(tmp_path, PAIR)
    attempt = _run(repo, script(propose=[RENAME]), "Rename Pair::swap to flip")
    assert attempt["outcome"] == "accepted", attempt
    assert "pub fn flip" in (repo / "src/lib.rs").read_text()


def test_a_doctest_whose_item_did_not_change_name_is_still_gone() -> None:
    from selfforge.judge.runners.testids import renamed_doctests

    then = ["doc::src/lib.rs - Pair<A,B>::swap", "doc::src/lib.rs - add"]
    now = ["doc::src/lib.rs - Pair<A,B>::flip", "doc::src/lib.rs - trivial"]
    diff = (
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n"
        "@@ -1 +1 @@\n-    pub fn swap(self) -> Pair<B, A> {\n"
        "+    pub fn flip(self) -> Pair<B, A> {\n"
    )
    assert renamed_doctests(then, now, diff) == {
        "doc::src/lib.rs - Pair<A,B>::swap": "doc::src/lib.rs - Pair<A,B>::flip"
    }


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for each mining run
def test_a_test_module_in_its_own_file_is_mined_as_tests(tmp_path: Path) -> None:
    """`#[cfg(test)] mod tests;` keeps a crate's tests in src/tests.rs: it is test code,
    so the commit that adds mul() with its test there is an instance, the test first."""
    lib = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    tests = "use super::*;\n\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n"
    repo = make_repo(
        tmp_path / "crate",
        {"Cargo.toml": CARGO_TOML, "src/lib.rs": lib, ".gitignore": "target/\nCargo.lock\n"},
    )
    (repo / "src/lib.rs").write_text(
        "pub fn mul(a: i32, b: i32) -> i32 {\n    a * b\n}\n\n"
        + lib
        + "\n#[cfg(test)]\nmod tests;\n"
    )
    (repo / "src/tests.rs").write_text(
        tests + "\n#[test]\nfn multiplies() {\n    assert_eq!(mul(2, 3), 6);\n}\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Add mul")
    instances = tmp_path / "rust.jsonl"
    cli("bench", "mine", "--repo", str(repo), "--out", str(instances), "--mutations", "0",
        check=True)  # fmt: skip
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert "src/tests.rs" in inst["test_files"] and inst["code_files"] == ["src/lib.rs"]
    assert "src/lib.rs::tests::multiplies" in inst["fail_to_pass"]
    assert "+pub fn mul" in inst["code_patch"] and "fn multiplies" not in inst["code_patch"]
    assert "mod tests;" in inst["test_patch"]


def test_rust_test_modules_are_test_code() -> None:
    from selfforge.repo.testpaths import is_test_path

    assert is_test_path("src/tests.rs") and is_test_path("src/parser/test.rs")
    assert is_test_path("src/parser/tests/cases.rs")
    assert not is_test_path("src/lib.rs") and not is_test_path("src/testing_utils.rs")


@needs_cargo
def test_cargo_selects_a_doctest_and_a_unit_test_by_name(tmp_path: Path) -> None:
    """The focused pass and reruns name doctests (``src/lib.rs - Pair<A,B>::swap``): the
    shell must get each name whole, and libtest must run exactly what was asked, or the
    selection errors and every rerun falls back to the whole suite."""
    from selfforge.judge.runners.cargo import CargoTest, parse_libtest

    repo = _crate(
        tmp_path, PAIR.replace("    fn adds()", "    fn other() {}\n\n    #[test]\n    fn adds()")
    )
    only = ["doc::src/lib.rs - Pair<A,B>::swap", "src/lib.rs::tests::adds"]
    prepared = CargoTest().prepare("cargo test --offline", only, str(tmp_path))
    proc = subprocess.run(
        ["bash", "-c", prepared.command], cwd=repo, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**__import__("os").environ, **prepared.env}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    report = parse_libtest(proc.stdout)
    assert report is not None, proc.stdout
    assert report.outcomes == {
        "doc::src/lib.rs - Pair<A,B>::swap": "passed",
        "src/lib.rs::tests::adds": "passed",
    }, proc.stdout
