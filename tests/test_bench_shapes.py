"""Bench shapes that still failed on histories nobody tuned on (issue 41.7), each mined and
replayed through `bench mine` / `bench run` as the real commit was: a crate whose tests
live in a module file of their own (`#[cfg(test)] mod test;`) and call the API the commit
adds, a commit that adds two functions with their doctests, two documented methods
renamed, a Vitest `describe` block among a task's targets, and a parametrized test whose
parameters embed the time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import cli, git, make_repo, needs_cargo

CARGO_TOML = '[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
IGNORE = "target/\nCargo.lock\n"


def _mine(repo: Path, out: Path, *args: str) -> list[dict]:
    cli("bench", "mine", "--repo", str(repo), "--out", str(out), *args, check=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


def _replay(instances: Path, tmp_path: Path, *modes: str) -> dict[str, dict]:
    results = tmp_path / "results.jsonl"
    proc = cli(
        "bench", "run", "--instances", str(instances), *modes,
        "--results", str(results), "--work-dir", str(tmp_path / "work"),
    )  # fmt: skip
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert rows, proc.stdout + proc.stderr
    return {r["kind"] or r["mode"]: r for r in rows}


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


# --- (b) a test module in its own file calls the API the commit adds --------------------

KV_LIB = """//! Key/value lines, as a config file holds them.
pub mod parser;

/// The format's version.
pub fn version() -> &'static str {
    let unused = 1; // a warning in the code: its place is no compile error's
    "0.1"
}
"""
KV_PARSER = """/// A key: the text before `=`, trimmed.
pub fn parse_key(line: &str) -> Option<&str> {
    let (key, _) = line.split_once('=')?;
    Some(key.trim())
}

#[cfg(test)]
mod test;
"""
KV_TEST = """use super::*;

#[test]
fn keys() {
    assert_eq!(parse_key(" a = 1"), Some("a"));
}

#[test]
fn no_key() {
    assert_eq!(parse_key("nothing"), None);
}
"""
KV_VALUE = """/// A value: the text after `=`, trimmed; none when it is empty.
pub fn parse_value(line: &str) -> Option<&str> {
    let (_, value) = line.split_once('=')?;
    let value = value.trim();
    if value.len() == 0 {
        return None;
    }
    Some(value)
}

"""
KV_VALUE_TEST = """
#[test]
fn values() {
    assert_eq!(parse_value(" a = 1 "), Some("1"));
    assert_eq!(parse_value("a ="), None);
}
"""


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for mining and each replay
def test_a_test_module_file_that_calls_the_new_api_is_judged_not_unrunnable(
    tmp_path: Path,
) -> None:
    """With the task's tests applied the base does not compile, only in
    src/parser/test.rs (and the code has a warning elsewhere): that is a failing test,
    as a Python test that fails to import is. Every job ended in "nothing runs on the
    unmodified code"; now the gold lands and every negative drawn is refused."""
    files = {
        "Cargo.toml": CARGO_TOML.format(name="kv"),
        ".gitignore": IGNORE,
        "src/lib.rs": KV_LIB,
        "src/parser/mod.rs": KV_PARSER,
        "src/parser/test.rs": KV_TEST,
    }
    repo = make_repo(tmp_path / "kv", files)
    (repo / "src/parser/mod.rs").write_text(
        KV_PARSER.replace("#[cfg(test)]", KV_VALUE + "#[cfg(test)]")
    )
    (repo / "src/parser/test.rs").write_text(KV_TEST + KV_VALUE_TEST)
    _commit(repo, "parser: parse_value")
    instances = tmp_path / "kv.jsonl"
    (inst,) = _mine(repo, instances)
    assert inst["test_files"] == ["src/parser/test.rs"], inst["test_files"]
    assert "src/lib.rs::parser::test::values" in inst["fail_to_pass"]
    rows = _replay(instances, tmp_path, "--gold", "--negatives")
    assert not [r for r in rows.values() if r["error"]], rows
    gold = rows["gold"]
    assert gold["landed"] and gold["solved"], gold
    drawn = {k: r for k, r in rows.items() if k != "gold" and r["skipped"] is None}
    assert {"bug", "skip-target", "delete-target", "weaken-target"} <= set(drawn), rows
    assert not [k for k, r in drawn.items() if r["landed"]], drawn


def test_a_compile_error_in_a_declared_test_module_is_the_tests_not_the_crate(
    tmp_path: Path,
) -> None:
    """The unit of the rule: rustc's errors only in test code (a warning's place in the
    code does not count) leave the crate judgeable; one in the code does not."""
    from selfforge.judge.runners.results import WHOLE_SUITE, TestReport
    from selfforge.judge.unrunnable import nothing_builds

    for path, text in {
        "src/lib.rs": KV_LIB,
        "src/parser/mod.rs": KV_PARSER,
        "src/parser/test.rs": KV_TEST + KV_VALUE_TEST,
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    report = TestReport(collect_errors={WHOLE_SUITE: "could not compile `kv`"})
    warning = "warning: unused variable: `unused`\n --> src/lib.rs:5:9\n  |\n\n"
    error = "error[E0425]: cannot find function `parse_value` in this scope\n  --> {}:15:16\n"
    assert nothing_builds(report, warning + error.format("src/parser/test.rs"), tmp_path) is None
    said = nothing_builds(
        report, warning + error.format("src/parser/mod.rs").replace(":15:", ":3:"), tmp_path
    )
    assert said is not None and "src/parser/mod.rs:3" in said


# --- (c) a commit adds two functions with their doctests --------------------------------

CALC = """//! Small arithmetic helpers.

/// Adds two numbers.
///
/// ```
/// assert_eq!(calc::add(2, 3), 5);
/// ```
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Subtracts `b` from `a`.
///
/// ```
/// assert_eq!(calc::sub(5, 3), 2);
/// ```
pub fn sub(a: i64, b: i64) -> i64 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 1), 2);
    }
}
"""
DOUBLE = """/// Twice a number.
///
/// ```
/// assert_eq!(calc::double(4), 8);
/// ```
pub fn double(a: i64) -> i64 {
    a * 2
}

"""
IS_EVEN = """/// Whether a number is even: its remainder by two is zero, for negative numbers
/// too (`%` keeps the sign of the dividend, and zero has none).
///
/// ```
/// assert!(calc::is_even(4));
/// assert!(calc::is_even(-2));
/// assert!(!calc::is_even(3));
/// ```
pub fn is_even(a: i64) -> bool {
    a % 2 == 0
}

"""
SATURATES = """
    #[test]
    fn adds_without_overflow() {
        assert_eq!(add(i64::MAX, 1), i64::MAX);
    }
}
"""


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for mining and each replay
def test_new_functions_with_their_doctests_are_required_by_their_doctest_ids(
    tmp_path: Path,
) -> None:
    """The commit adds double() and is_even() with their doctests and makes add()
    saturate (a unit test): the task names the two doctest ids, which the base does not
    have. The negatives that drop is_even() (incomplete) or break it (bug) landed: the
    doctest ids were not read from the task."""
    files = {"Cargo.toml": CARGO_TOML.format(name="calc"), ".gitignore": IGNORE}
    repo = make_repo(tmp_path / "calc", {**files, "src/lib.rs": CALC})
    lib = CALC.replace("/// Subtracts", DOUBLE + "/// Subtracts")
    lib = lib.replace("    a + b\n", "    a.saturating_add(b)\n")
    lib = lib.replace("#[cfg(test)]", IS_EVEN + "#[cfg(test)]")
    lib = lib.rstrip().removesuffix("}") + SATURATES.lstrip("\n")
    (repo / "src/lib.rs").write_text(lib)
    _commit(repo, "Add double and is_even; add saturates")
    instances = tmp_path / "calc.jsonl"
    (inst,) = _mine(repo, instances)
    assert {"doc::src/lib.rs - double", "doc::src/lib.rs - is_even"} <= set(inst["fail_to_pass"])
    rows = _replay(instances, tmp_path, "--gold", "--negatives")
    assert rows["gold"]["landed"] and rows["gold"]["solved"], json.dumps(rows["gold"])
    for kind in ("bug", "incomplete"):
        row = rows[kind]
        assert row["skipped"] is None and not row["error"], row
        assert not row["landed"], row
        assert "doc::src/lib.rs - is_even" in row["reasons"][-1], row["reasons"]


def test_a_task_names_rust_doctests_by_their_ids() -> None:
    from selfforge.judge.criterion import named_tests
    from selfforge.judge.runners.results import TestReport

    base = TestReport(outcomes={"doc::src/lib.rs - add": "passed"})
    task = (
        "Add double.\n\nThe failing tests must pass: doc::src/lib.rs - double, "
        "doc::src/lib.rs - Pair<A,B>::swap, doc::src/lib.rs - f (example 2), "
        "src/lib.rs::tests::adds"
    )
    assert named_tests(task, base) == [
        "src/lib.rs::tests::adds",
        "doc::src/lib.rs - double",
        "doc::src/lib.rs - Pair<A,B>::swap",
        "doc::src/lib.rs - f (example 2)",
    ]


# --- (d) Vitest: a describe block's own id beside its tests -----------------------------

JS_RUNNERS = Path(
    os.environ.get("SELFFORGE_JS_RUNNERS", Path.home() / ".cache/selfforge-ci/js-runners")
)
VITEST = JS_RUNNERS / "node_modules" / ".bin" / "vitest"
SLUG = """export function slug(text: string): string {
  return text.trim().toLowerCase().replace(/\\s+/g, '-');
}
"""
UNSLUG = """
export function unslug(text: string): string {
  return text.split('-').filter((word) => word.length > 0).join(' ');
}
"""
SLUG_SPEC = """import { beforeAll, describe, expect, it } from 'vitest';
import { slug, unslug } from './slug';

describe('slug', () => {
  it('lowers and joins words', () => {
    expect(slug(' Hello  World ')).toBe('hello-world');
  });
});

describe('unslug', () => {
  let title: string;

  beforeAll(() => {
    title = unslug(slug('Hello World'));
  });

  it('round-trips a title', () => {
    expect(title).toBe('hello world');
  });

  it('drops empty words', () => {
    expect(unslug('a--b-')).toBe('a b');
  });
});
"""


def _vitest_repo(tmp_path: Path) -> Path:
    from conftest import directives

    command = f"{VITEST} run --reporter=junit --outputFile=junit.xml"
    text = directives(command).replace(
        "[checks]\n", '[checks]\nrunner = "junit"\njunit = "junit.xml"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(JS_RUNNERS))}]\n"
    files = {
        "package.json": json.dumps({"name": "slugs", "version": "1.0.0", "type": "module"}),
        "src/slug.ts": SLUG,
        "src/slug.spec.ts": SLUG_SPEC,
        ".gitignore": "junit.xml\n",
    }
    return make_repo(tmp_path / "slugs", files, text)


@pytest.mark.skipif(not VITEST.exists(), reason=f"needs vitest in {JS_RUNNERS}")
def test_a_vitest_describe_block_is_not_a_target_of_its_tests_id(tmp_path: Path, script) -> None:
    """On the base the block's beforeAll fails (unslug is not written yet): Vitest reports
    the block itself, `src/slug.spec.ts::unslug`, as a failed test and skips its tests.
    The task names the tests (`src/slug.spec.ts::unslug > round-trips a title`), as the
    bench writes them; the gold made the block's own entry disappear, and the judge
    called it "not collected"."""
    from conftest import log_json

    repo = _vitest_repo(tmp_path)
    task = (
        "Add unslug(), slug()'s inverse.\n\nThe failing tests must pass: "
        "src/slug.spec.ts::unslug > round-trips a title, "
        "src/slug.spec.ts::unslug > drops empty words"
    )
    half = UNSLUG.replace(".filter((word) => word.length > 0)", "")
    for code, landed in ((half, False), (UNSLUG, True)):
        edit = f"src/slug.ts\n<<<<<<< SEARCH\n{SLUG}=======\n{SLUG}{code}>>>>>>> REPLACE\n"
        proc = cli("run", "--repo", str(repo), "--model", script(propose=[edit]), "--task", task)
        attempt = log_json(repo)[-1]
        out = proc.stdout + proc.stderr
        assert (attempt["outcome"] == "accepted") is landed, (attempt["reason"], out)
        assert "not collected" not in attempt["reason"], attempt["reason"]
    assert "export function unslug" in (repo / "src/slug.ts").read_text()


def test_a_js_test_id_names_the_test_not_its_block() -> None:
    from selfforge.judge.criterion import for_task
    from selfforge.judge.runners.results import TestReport
    from selfforge.judge.verdict import Observed

    base = TestReport(
        outcomes={
            "src/slug.spec.ts::slug > lowers": "passed",
            "src/slug.spec.ts::unslug": "failed",
            "src/slug.spec.ts::unslug > round-trips": "skipped",
        }
    )
    criterion = for_task(
        "The failing tests must pass: src/slug.spec.ts::unslug > round-trips", Observed(tests=base)
    )
    assert "src/slug.spec.ts::unslug" not in criterion.targets, criterion
    assert criterion.every and "src/slug.spec.ts::unslug > round-trips" in criterion.targets


# --- (a) two documented methods renamed, verb_noun -> noun_verb -------------------------

BUFFER = """//! A growable byte buffer.

/// Bytes, in order.
#[derive(Debug, Default)]
pub struct Buffer {
    bytes: Vec<u8>,
}

impl Buffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a byte.
    ///
    /// ```
    /// let mut b = bytes::Buffer::new();
    /// b.push_byte(7);
    /// assert_eq!(b.len(), 1);
    /// ```
    pub fn push_byte(&mut self, byte: u8) {
        self.bytes.push(byte);
    }

    /// Removes the last byte.
    ///
    /// ```
    /// let mut b = bytes::Buffer::new();
    /// b.push_byte(7);
    /// assert_eq!(b.pop_byte(), Some(7));
    /// assert_eq!(b.pop_byte(), None);
    /// ```
    pub fn pop_byte(&mut self) -> Option<u8> {
        self.bytes.pop()
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_empty() {
        assert!(Buffer::new().is_empty());
    }
}
"""
RENAMED = BUFFER.replace("push_byte", "byte_push").replace("pop_byte", "byte_pop")


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for mining and the replay
def test_two_renamed_documented_methods_land_by_their_new_doctest_ids(tmp_path: Path) -> None:
    """The commit renames push_byte and pop_byte: their doc examples (tests, committed
    first) call the new names and fail on the base; the task names the new doctest ids.
    The gold was refused with the base's ids "no longer collected"."""
    files = {"Cargo.toml": CARGO_TOML.format(name="bytes"), ".gitignore": IGNORE}
    repo = make_repo(tmp_path / "bytes", {**files, "src/lib.rs": BUFFER})
    (repo / "src/lib.rs").write_text(RENAMED)
    _commit(repo, "Rename push_byte and pop_byte to byte_push and byte_pop")
    instances = tmp_path / "bytes.jsonl"
    (inst,) = _mine(repo, instances, "--mutations", "0")
    assert sorted(inst["fail_to_pass"]) == [
        "doc::src/lib.rs - Buffer::byte_pop",
        "doc::src/lib.rs - Buffer::byte_push",
    ]
    gold = _replay(instances, tmp_path, "--gold")["gold"]
    assert gold["landed"] and gold["solved"], gold["reasons"]


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for the baseline and the candidate
def test_a_rename_task_without_ids_follows_the_renamed_failing_doctests(
    tmp_path: Path, script
) -> None:
    """The same rename asked in words: the failing doc examples are the targets, under
    the base's ids; the change renames the items they document, so they are the same
    tests under the new ids, not "no longer collected"."""
    from conftest import directives, log_json

    first = BUFFER.replace("b.push_byte(", "b.byte_push(").replace("b.pop_byte(", "b.byte_pop(")
    files = {"Cargo.toml": CARGO_TOML.format(name="bytes"), ".gitignore": IGNORE}
    repo = make_repo(
        tmp_path / "bytes", {**files, "src/lib.rs": first}, directives("cargo test --offline")
    )
    edit = "".join(
        f"src/lib.rs\n<<<<<<< SEARCH\n    pub fn {old}{rest}\n=======\n"
        f"    pub fn {new}{rest}\n>>>>>>> REPLACE\n"
        for old, new, rest in (
            ("push_byte", "byte_push", "(&mut self, byte: u8) {"),
            ("pop_byte", "byte_pop", "(&mut self) -> Option<u8> {"),
        )
    )
    task = "Rename push_byte and pop_byte to byte_push and byte_pop"
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[edit]), "--task", task)
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "accepted", (attempt["reason"], proc.stdout + proc.stderr)


# --- (e) a parametrized test whose parameters embed the time -----------------------------

STAMPS = '''"""Time stamps for the log."""

from datetime import datetime, timezone


def parse(text):
    return datetime.fromisoformat(text)


def describe(stamp):
    return stamp.strftime("%Y-%m-%d")
'''
NOW = '''def now(utc=False):
    """The time now, in UTC (with its zone) or local."""
    if utc:
        return datetime.now(timezone.utc)
    return datetime.now()


def describe(stamp, with_time=False):
    if with_time:
        return stamp.strftime("%Y-%m-%d %H:%M")
    return stamp.strftime("%Y-%m-%d")
'''
TEST_STAMPS = """from datetime import datetime, timedelta

import pytest

from stamps import describe, parse

STAMPS = [str(datetime.now()), str(datetime.now() + timedelta(days=1))]


@pytest.mark.parametrize("text", STAMPS)
def test_parse(text):
    assert parse(text).year >= 2000


def test_describe():
    assert describe(datetime(2020, 1, 2)) == "2020-01-02"
"""
TEST_NOW = """

@pytest.mark.parametrize("with_time", [True, False])
def test_describe_now(with_time):
    from stamps import now

    text = describe(now(utc=with_time), with_time=with_time)
    assert len(text) == (16 if with_time else 10)
    assert (now(utc=with_time).tzinfo is not None) is with_time
"""


@pytest.mark.slow  # mines and replays every kind of negative
def test_a_time_stamped_parameter_is_not_a_fail_to_pass_test(tmp_path: Path) -> None:
    """test_parse's ids embed the time they ran at, so the base's and the commit's ids
    differ: mining listed them as FAIL_TO_PASS beside the True and False the commit adds,
    and every negative "broke a listed test" in the bench's own runs, whatever it did, so
    a harmless mutation (the default of `utc`) was planted as a bug and landed, as did the
    test file that repairs nothing; the gold was never "solved"."""
    repo = make_repo(
        tmp_path / "stamps", {"stamps.py": STAMPS, "tests/test_stamps.py": TEST_STAMPS}
    )
    (repo / "stamps.py").write_text(STAMPS.split("def describe")[0] + NOW)
    (repo / "tests/test_stamps.py").write_text(TEST_STAMPS + TEST_NOW)
    _commit(repo, "describe() can show the time; now(utc)")
    instances = tmp_path / "stamps.jsonl"
    (inst,) = _mine(repo, instances)
    assert inst["fail_to_pass"] == [
        "tests/test_stamps.py::test_describe_now[False]",
        "tests/test_stamps.py::test_describe_now[True]",
    ]
    assert len([t for t in inst["pass_to_pass"] if "test_parse[" in t]) == 2
    kinds = ("--kinds", "bug,incomplete,order")  # the kinds that landed
    rows = _replay(instances, tmp_path, "--gold", "--negatives", *kinds)
    assert not [r for r in rows.values() if r["error"]], rows
    assert rows["gold"]["landed"] and rows["gold"]["solved"], json.dumps(rows["gold"])
    assert rows["bug"]["skipped"] is None and rows["order"]["skipped"] is None, rows
    landed = [k for k, r in rows.items() if k != "gold" and r["landed"]]
    assert not landed, {k: rows[k]["drawn"] for k in landed}


def test_a_should_panic_test_is_known_by_its_name() -> None:
    """libtest prints `test invalid_flag_01 - should panic ... ok`: the mark is no part of
    the test's name (libtest selects it without), and a task writes the id without a
    space in it. RazrFalcon/pico-args 32194fb's gold was refused with its four
    `#[should_panic]` tests "not collected"."""
    from selfforge.judge.runners.cargo import parse_libtest

    output = (
        "     Running tests/tests.rs (target/debug/deps/tests-1)\n\nrunning 2 tests\n"
        "test invalid_flag_01 - should panic ... ok\ntest contains_01 ... ok\n\n"
        "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    )
    report = parse_libtest(output)
    assert report is not None
    assert set(report.outcomes) == {
        "tests/tests.rs::invalid_flag_01",
        "tests/tests.rs::contains_01",
    }


@needs_cargo
@pytest.mark.slow  # cargo builds the crate for mining
def test_a_parent_whose_code_does_not_compile_is_no_instance(tmp_path: Path) -> None:
    """RazrFalcon/xmlwriter 82038ca ("Fix merge errors") repairs a parent whose code does
    not compile, and changes a test: every job of it ended in "nothing runs on the
    unmodified code". It is no tests-first task: mining says why and leaves it out."""
    broken = "pub fn add(a: i32, b: i32) -> i32 {\n    a + c\n}\n"
    test = "#[test]\nfn adds() {\n    assert_eq!(adder::add(2, 3), 5);\n}\n"
    files = {"Cargo.toml": CARGO_TOML.format(name="adder"), ".gitignore": IGNORE}
    repo = make_repo(tmp_path / "adder", {**files, "src/lib.rs": broken, "tests/it.rs": test})
    (repo / "src/lib.rs").write_text(broken.replace("a + c", "a + b"))
    (repo / "tests/it.rs").write_text(
        test + test.replace("adds", "adds_zero").replace("2, 3), 5", "0, 0), 0")
    )
    _commit(repo, "Fix merge errors")
    out = tmp_path / "adder.jsonl"
    proc = cli("bench", "mine", "--repo", str(repo), "--out", str(out))
    said = proc.stdout + proc.stderr
    assert not out.exists() or not out.read_text().strip(), out.read_text()
    assert "the crate does not compile" in said and "src/lib.rs:2" in said, said
