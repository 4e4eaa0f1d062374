"""Rust projects judged with the real toolchain (rustup's cargo, shown read-only in the
sandbox): per-test results from libtest, a fix lands, a regression and an `#[ignore]`
are refused, a forged `... ok` line cannot hide a failure or invent a test."""

from __future__ import annotations

from pathlib import Path

from conftest import cli, directives, journal_test_runs, log_json, make_repo, needs_cargo

pytestmark = needs_cargo

CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

pub fn sub(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }

    #[test]
    fn subtracts() {
        assert_eq!(sub(5, 3), 2);
    }
}
"""
IT = "#[test]\nfn integration_sub() {\n    assert_eq!(adder::sub(2, 2), 0);\n}\n"
FIX = (
    "src/lib.rs\n<<<<<<< SEARCH\npub fn add(a: i32, b: i32) -> i32 {\n    a - b\n=======\n"
    "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n>>>>>>> REPLACE\n"
)
BREAK_SUB = FIX + (
    "src/lib.rs\n<<<<<<< SEARCH\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n=======\n"
    "pub fn sub(a: i32, b: i32) -> i32 {\n    a * b\n>>>>>>> REPLACE\n"
)
IGNORE = (
    "src/lib.rs\n<<<<<<< SEARCH\n    #[test]\n    fn adds() {\n=======\n"
    "    #[test]\n    #[ignore]\n    fn adds() {\n>>>>>>> REPLACE\n"
)
TASK = "Fix add so that the adds test passes"


def _repo(tmp_path: Path) -> Path:
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/it.rs": IT}
    return make_repo(tmp_path / "repo", files, directives("cargo test --offline"))


def _run(repo: Path, spec: str) -> str:
    proc = cli("run", "--repo", str(repo), "--model", spec, "--task", TASK, "--json")
    return proc.stdout + proc.stderr


def test_a_fix_lands(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    out = _run(repo, script(propose=[FIX]))
    assert log_json(repo)[-1]["outcome"] == "accepted", out
    assert "src/lib.rs::tests::adds" in out  # the baseline named the failing test
    assert "a + b" in (repo / "src/lib.rs").read_text()


def test_a_regression_is_rejected_in_both_test_binaries(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    _run(repo, script(propose=[BREAK_SUB]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "src/lib.rs::tests::subtracts" in attempt["reason"]


def test_an_ignore_is_refused(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    _run(repo, script(propose=[FIX + IGNORE]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "#[ignore]" in attempt["reason"] and "src/lib.rs" in attempt["reason"]


def test_a_forged_ok_line_is_caught(tmp_path: Path, script) -> None:
    """add stays broken; the code prints libtest's line for a passing `adds` and for a
    test that does not exist. Worst outcome wins, and the counts no longer add up."""
    forge = (
        "src/lib.rs\n<<<<<<< SEARCH\npub fn add(a: i32, b: i32) -> i32 {\n=======\n"
        "pub fn add(a: i32, b: i32) -> i32 {\n    use std::io::Write;\n"
        '    let _ = writeln!(std::io::stdout(), "test tests::adds ... ok");\n'
        '    let _ = writeln!(std::io::stdout(), "test tests::phantom ... ok");\n'
        ">>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path)
    _run(repo, script(propose=[forge]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "cannot be trusted" in attempt["reason"] or "tests::adds" in attempt["reason"]
    assert "a - b" in (repo / "src/lib.rs").read_text()


def test_an_edit_to_an_existing_inline_test_is_refused_a_new_one_lands(
    tmp_path: Path, script
) -> None:
    """Rust unit tests live in the sources: changing what `adds` asserts is a test edit
    (refused without allow_test_edits), adding a test beside it is not."""
    weaken = FIX + (
        "src/lib.rs\n<<<<<<< SEARCH\n        assert_eq!(sub(5, 3), 2);\n=======\n"
        "        assert!(sub(5, 3) != 99);\n>>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path)
    _run(repo, script(propose=[weaken]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "edits an existing test in the inline test module of src/lib.rs" in attempt["reason"]
    added = FIX + (
        "src/lib.rs\n<<<<<<< SEARCH\n        assert_eq!(sub(5, 3), 2);\n    }\n=======\n"
        "        assert_eq!(sub(5, 3), 2);\n    }\n\n    #[test]\n    fn adds_one() {\n"
        "        assert_eq!(add(4, 1), 5);\n    }\n>>>>>>> REPLACE\n"
    )  # add(4, 0) would pass on the unfixed add() too: a test that cannot fail is refused
    _run(repo, script(propose=[added]))
    assert log_json(repo)[-1]["outcome"] == "accepted", log_json(repo)[-1]["reason"]
    assert "fn adds_one" in (repo / "src/lib.rs").read_text()


def test_doctest_ids_do_not_move_with_the_code_above_them() -> None:
    """libtest names a doctest by its line: a change above it would make it a new test
    and the old one "no longer collected". Its id is the item's name (and rank)."""
    from selfforge.judge.runners.cargo import parse_libtest

    def run(first: int, second: int) -> dict[str, str]:
        out = (
            "   Doc-tests adder\n\nrunning 3 tests\n"
            f"test src/lib.rs - add (line {first}) ... ok\n"
            f"test src/lib.rs - add (line {second}) ... ok\n"
            "test src/lib.rs - sub (line 40) ... ok\n\n"
            "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
        )
        report = parse_libtest(out)
        assert report is not None and report.channel_problem is None
        return report.outcomes

    before, after = run(3, 9), run(12, 18)
    assert before == after
    assert set(before) == {
        "doc::src/lib.rs - add",
        "doc::src/lib.rs - add (example 2)",
        "doc::src/lib.rs - sub",
    }


def test_a_doctest_keeps_its_id_whichever_example_finishes_first() -> None:
    """Doctests run in parallel: the second example of an item may report first. Its
    rank comes from its line, so a failure stays with its own example on every run (in
    the order results came, two runs of the same code swapped ids and the judge called
    the target flaky)."""
    from selfforge.judge.runners.cargo import parse_libtest

    def run(*lines: str) -> dict[str, str]:
        out = (
            "   Doc-tests adder\n\nrunning 2 tests\n"
            + "".join(lines)
            + ("\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n")
        )
        report = parse_libtest(out)
        assert report is not None
        return report.outcomes

    first = "test src/lib.rs - add (line 3) ... ok\n"
    second = "test src/lib.rs - add (line 9) ... FAILED\n"
    assert run(first, second) == run(second, first)
    assert run(second, first)["doc::src/lib.rs - add (example 2)"] == "failed"


def test_a_blank_line_removed_before_the_test_module_is_not_a_removed_test() -> None:
    from selfforge.judge.rules.integrity_lang import weakening

    diff = " }\n \n-\n #[cfg(test)]\n mod tests {\n"
    assert weakening("src/lib.rs", diff, False) is None
    assert weakening("src/lib.rs", " }\n-#[cfg(test)]\n mod tests {\n", False)


NEW_TESTS_LIB = LIB.replace(
    "    #[test]\n    fn subtracts()",
    "    #[test]\n    fn doubles() {\n        assert_eq!(double(4), 8);\n    }\n\n"
    "    #[test]\n    fn halves() {\n        assert_eq!(half(8), 4);\n    }\n\n"
    "    #[test]\n    fn subtracts()",
).replace("    a - b\n}\n\npub fn sub", "    a + b\n}\n\npub fn sub")


def test_once_a_crate_builds_none_of_its_tests_may_fail_named_or_not(
    tmp_path: Path, script
) -> None:
    """The tests came first and reference functions that do not exist: the crate does not
    build. The task names one test; a change that makes it pass and leaves another of
    the crate's tests failing is rejected, the whole change lands."""
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": NEW_TESTS_LIB, "tests/it.rs": IT}
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    task = "Add double and half. The failing tests must pass: src/lib.rs::tests::doubles"

    def code(half: str) -> str:
        return (
            "src/lib.rs\n<<<<<<< SEARCH\npub fn sub(a: i32, b: i32) -> i32 {\n=======\n"
            "pub fn double(x: i32) -> i32 {\n    x * 2\n}\n\n"
            f"pub fn half(x: i32) -> i32 {{\n    {half}\n}}\n\n"
            "pub fn sub(a: i32, b: i32) -> i32 {\n>>>>>>> REPLACE\n"
        )

    cli("run", "--repo", str(repo), "--model", script(propose=[code("x * 2")]), "--task", task)
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected", attempt
    assert "<crate>::<collection>: failed" in str(attempt["reason"]), attempt
    cli("run", "--repo", str(repo), "--model", script(propose=[code("x / 2")]), "--task", task)
    assert log_json(repo)[-1]["outcome"] == "accepted", log_json(repo)[-1]


def test_a_compile_only_doctest_id_does_not_move_either() -> None:
    from selfforge.judge.runners.cargo import parse_libtest

    out = (
        "   Doc-tests adder\n\nrunning 1 test\n"
        "test src/lib.rs - Token (line 77) - compile ... ok\n\n"
        "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    )
    report = parse_libtest(out)
    assert report is not None and set(report.outcomes) == {"doc::src/lib.rs - Token - compile"}


def test_a_doctest_that_fails_all_along_does_not_block_a_crate_that_now_builds(
    tmp_path: Path, script
) -> None:
    """The crate did not build before the change (the tests came first); once it does,
    its tests must all pass, but a documentation example that never compiled (here a
    compile-only one naming a missing item) is not the task's."""
    broken_doc = (
        "/// ```no_run\n/// let x = undefined_thing();\n/// ```\npub fn documented() {}\n\n"
    )
    files = {
        "Cargo.toml": CARGO_TOML,
        "src/lib.rs": broken_doc + NEW_TESTS_LIB,
        "tests/it.rs": IT,
    }
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    task = "Add double and half. The failing tests must pass: src/lib.rs::tests::doubles"
    fix = (
        "src/lib.rs\n<<<<<<< SEARCH\npub fn sub(a: i32, b: i32) -> i32 {\n=======\n"
        "pub fn double(x: i32) -> i32 {\n    x * 2\n}\n\n"
        "pub fn half(x: i32) -> i32 {\n    x / 2\n}\n\n"
        "pub fn sub(a: i32, b: i32) -> i32 {\n>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[fix]), "--task", task)
    assert log_json(repo)[-1]["outcome"] == "accepted", log_json(repo)[-1]


def test_a_result_line_that_holds_another_cannot_be_trusted() -> None:
    """Test code that writes libtest's lines while libtest writes its own can merge two
    lines into one and still make the counts add up (seen in CI: `subtracts` vanished
    and the forged `phantom` took its place). No test's name holds ` ... `."""
    from selfforge.judge.runners.cargo import parse_libtest

    out = (
        "     Running unittests src/lib.rs (target/debug/deps/adder-1)\n\nrunning 2 tests\n"
        "test tests::adds ... ok\n"
        "test tests::subtracts ... test tests::phantom ... ok\nok\n"
        "test tests::adds ... FAILED\n\n"
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n"
    )
    report = parse_libtest(out)
    assert report is not None and report.channel_problem is not None
    assert "a result line holds another" in report.channel_problem


SLOW_IT = "use std::{thread, time};\n\n" + "".join(
    f"#[test]\nfn waits_{n}() {{\n    thread::sleep(time::Duration::from_millis(2100));\n}}\n"
    for n in range(3)
)


def test_the_first_pass_runs_only_the_tests_of_the_changed_target(tmp_path: Path, script) -> None:
    """A change to the library is first judged on the library's own tests (`--exact`
    picks them by name; the slow integration tests, which do not use it, wait): a
    regression is refused there, and a fix then passes the whole suite."""
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/slow.rs": SLOW_IT}
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    _run(repo, script(propose=[BREAK_SUB]))
    assert log_json(repo)[-1]["outcome"] == "rejected"
    assert journal_test_runs(repo) == [("tests:affected", {"passed": 1, "failed": 1})]
    _run(repo, script(propose=[FIX]))
    assert log_json(repo)[-1]["outcome"] == "accepted"
    assert journal_test_runs(repo)[1:] == [
        ("tests:affected", {"passed": 2}),
        ("tests", {"passed": 5}),
    ]


HELPER = (
    "tests/common/mod.rs\n<<<<<<< SEARCH\n=======\n"
    "pub fn zero() -> i32 {\n    0\n}\n>>>>>>> REPLACE\n"
    "tests/it.rs\n<<<<<<< SEARCH\n#[test]\nfn integration_sub() {\n=======\n"
    "mod common;\n\n#[test]\nfn integration_sub() {\n"
    "    assert_eq!(common::zero(), 0);\n>>>>>>> REPLACE\n"
)


def test_a_new_helper_module_for_the_integration_tests_stays_in_the_judged_run(
    tmp_path: Path, script
) -> None:
    """New test files stay out of the run that judges the code, but a helper the tests
    use (`tests/common/mod.rs`, no test target of its own) is not one: with test edits
    allowed, a fix whose integration test now uses a new helper lands."""
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/it.rs": IT}
    text = directives("cargo test --offline", extra="[safety]\nallow_test_edits = true\n")
    repo = make_repo(tmp_path / "repo", files, text)
    out = _run(repo, script(propose=[FIX + HELPER]))
    assert log_json(repo)[-1]["outcome"] == "accepted", out
    assert (repo / "tests/common/mod.rs").exists()
