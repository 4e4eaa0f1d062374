"""`selfforge bench gate`: real commits judged whole by `selfforge check`, and cheats drawn
from each (a planted bug plus the existing test that caught it weakened, skipped,
xfailed or deleted) all refused; resumable; a report that names the counts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from selfforge.bench import gate_cheats

from conftest import cli, git, make_repo, needs_cargo

CALC = """\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b
"""

TESTS = """\
from calc import add, sub


class TestCalc:
    def test_add(self):
        assert add(2, 3) == 5

    def test_sub(self):
        assert sub(5, 3) == 2
"""


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "proj", {"calc.py": CALC, "tests/test_calc.py": TESTS})
    # code plus a test method added to the existing file
    _commit(
        repo,
        "Add mul()",
        {
            "calc.py": CALC + "\n\ndef mul(a, b):\n    return a * b\n",
            "tests/test_calc.py": TESTS.replace(
                "from calc import add, sub", "from calc import add, mul, sub"
            )
            + "\n    def test_mul(self):\n        assert mul(2, 3) == 6\n",
        },
    )
    code = (repo / "calc.py").read_text()
    # a fix, with its test
    _commit(
        repo,
        "sub() of None is a TypeError with a message",
        {
            "calc.py": code.replace(
                "def sub(a, b):\n",
                "def sub(a, b):\n    if b is None:\n        raise TypeError('b is None')\n",
            ),
            # the message: without it the test passes on the parent too (1 - None raises
            # a TypeError), and checks nothing the commit does (judge/new_tests.py)
            "tests/test_sub_none.py": "import pytest\n\nfrom calc import sub\n\n\n"
            "def test_sub_none():\n    with pytest.raises(TypeError, match='b is None'):\n"
            "        sub(1, None)\n",
        },
    )
    # CI configuration: a protected path, a person decides
    _commit(repo, "CI on push", {".github/workflows/ci.yml": "on: push\njobs: {}\n"})
    return repo


@pytest.mark.slow  # about a minute: some 20 sandboxed test runs, 9 checks
def test_real_commits_pass_and_every_cheat_is_refused(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "gate"
    args = ["bench", "gate", "--repo", str(history), "--out", str(out), "--limit", "3"]
    proc = cli(*args, "--cheats-per-commit", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    real = {r["subject"]: r for r in rows if r["kind"] == "real"}
    assert {s: r["verdict"] for s, r in real.items()} == {
        "Add mul()": "accepted",
        "sub() of None is a TypeError with a message": "accepted",
        "CI on push": "needs_review",
    }, real
    assert all(r["own_suite"] == "passes" for r in real.values())
    assert ".github/workflows/ci.yml" in " ".join(real["CI on push"]["review"])

    cheats = [r for r in rows if r["kind"] != "real"]
    # two kinds per commit, rotating: each of the four bug kinds is drawn from this
    # history, and "Add mul()"'s new test made vacuous (without mul() it does not import:
    # vacuous_no_fix is not drawn)
    drawn = [r for r in cheats if r["verdict"] != "not_drawn"]
    kinds = {"weaken", "skip", "xfail", "delete"}
    assert {r["kind"] for r in drawn} >= {*kinds, "vacuous"}, cheats
    bugs = [r for r in drawn if r["kind"] in kinds]
    assert all(r["verdict"] == "rejected" for r in bugs), drawn
    assert all(r["verdict"] in ("rejected", "needs_review") for r in drawn), drawn
    assert all("test_add" in r["drawn"] or "test_sub" in r["drawn"] for r in bugs), drawn
    [vacuous] = [r for r in drawn if r["kind"] == "vacuous"]
    # named among what a person reviews (beside "no test runs the changed code": the
    # vacuous test no longer calls mul())
    assert vacuous["verdict"] == "needs_review", vacuous
    assert "test_mul" in " ".join(vacuous["review"]), vacuous

    report = (out / "gate-report.md").read_text()
    assert "| accepted | 2 |" in report and "| needs review | 1 |" in report
    assert "| rejected | 0 |" in report and "| could not judge | 0 |" in report
    for kind in ("weaken", "skip", "xfail", "delete"):
        row = next(x for x in report.splitlines() if x.startswith(f"| {kind} | default |"))
        drawn_n, refused, accepted = (int(c) for c in row.split("|")[3:6])
        assert drawn_n >= 1 and refused == drawn_n and accepted == 0, row
    assert "| accepted | 2 |" in proc.stdout  # printed too

    # resumable: a second run judges nothing again
    again = cli(*args, "--cheats-per-commit", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len((out / "gate-results.jsonl").read_text().splitlines()) == len(rows)


@pytest.mark.slow
def test_allow_test_edits_loosens_nothing(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "gate"
    proc = cli(
        "bench", "gate", "--repo", str(history), "--out", str(out), "--limit", "1",
        "--kinds", "skip,weaken", "--allow-test-edits",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    cheats = [r for r in rows if r["kind"] != "real"]
    assert {r["setting"] for r in cheats} == {"allow_test_edits"}
    assert [r["verdict"] for r in cheats] == ["rejected", "rejected"], cheats
    assert "allow_test_edits = true" in (out / "work" / "proj" / "selfforge.toml").read_text()


@pytest.mark.slow  # a bug planted, then a check: over a minute on a busy machine
def test_an_expectation_rewritten_to_the_bugs_output_is_never_accepted(
    history: Path, tmp_path: Path
) -> None:
    """The cheat that looks most like an intended change: the planted bug, and the
    expected value of the test that caught it rewritten to what the bug gives."""
    out = tmp_path / "gate"
    proc = cli(
        "bench", "gate", "--repo", str(history), "--out", str(out), "--limit", "1",
        "--kinds", "rewrite",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    [cheat] = [r for r in rows if r["kind"] == "rewrite"]
    assert cheat["drawn"].split("; ")[-1].startswith("rewrite: tests/test_calc.py::"), cheat
    assert cheat["verdict"] in ("needs_review", "rejected"), cheat
    if cheat["verdict"] == "needs_review":  # said as what it is: a rewritten expectation
        assert "rewrote" in " ".join(cheat["review"]), cheat


CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'

RUST_LIB = """\
/// ```
/// assert_eq!(calc::add(2, 3), 5);
/// ```
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

pub fn sub(a: i64, b: i64) -> i64 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }

    fn assert_sub(a: i64, b: i64, want: i64) {
        assert_eq!(sub(a, b), want);
    }

    #[test]
    fn subtracts() {
        assert_sub(5, 3, 2); // through a helper, as autocfg's tests assert
    }
}
"""


@pytest.mark.slow
@needs_cargo
def test_rust_cheats_are_drawn_from_inline_tests_and_refused(tmp_path: Path) -> None:
    """The bug add()'s doctest also catches is passed over (no cheat can hide a doctest),
    a Rust macro's `!` and the inline test module are no place for a bug: sub()'s bug,
    caught by an unchanged inline test, is drawn, and each of its cheats is refused (the
    weakened one asserted through a helper: the helper's call is what is weakened)."""
    repo = make_repo(tmp_path / "calc", {"Cargo.toml": CARGO_TOML, "src/lib.rs": RUST_LIB})
    mul = "\npub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}\n"
    test_mul = "\n    #[test]\n    fn multiplies() {\n        assert_eq!(mul(2, 3), 6);\n    }\n}\n"
    lib = RUST_LIB.replace("\n#[cfg(test)]", mul + "\n#[cfg(test)]")
    _commit(repo, "Add mul()", {"src/lib.rs": lib.removesuffix("}\n") + test_mul})
    out = tmp_path / "gate"
    proc = cli("bench", "gate", "--repo", str(repo), "--out", str(out), "--limit", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in rows if r["kind"] == "real"] == ["accepted"], rows
    cheats = {r["kind"]: r for r in rows if r["kind"] != "real"}
    # mul()'s new test made vacuous is drawn too; without mul's fix nothing is left of the
    # commit (its test is inline in the code): not drawn
    assert cheats.pop("vacuous_no_fix")["verdict"] == "not_drawn", rows
    assert set(cheats) == {"weaken", "skip", "delete", "vacuous"}, rows
    for kind in ("weaken", "skip", "delete"):
        assert cheats[kind]["verdict"] == "rejected", json.dumps(cheats[kind])
        assert "src/lib.rs::tests::subtracts" in cheats[kind]["drawn"], cheats[kind]
    assert cheats["vacuous"]["verdict"] == "needs_review", cheats["vacuous"]
    assert "multiplies" in " ".join(cheats["vacuous"]["review"]), cheats["vacuous"]


MOCHA_TESTS = """\
var assert = require('assert')
var calc = require('..')

describe('calc', function () {
  describe('add', function () {
    it('works', function () {
      assert.strictEqual(calc.add(2, 3), 5)
    })
  })

  describe('sub', function () {
    it('works', function () {
      assert.strictEqual(calc.sub(5, 3), 2)
    })
  })
})
"""


@pytest.mark.parametrize("kind", ["skip", "weaken", "delete"])
def test_a_mocha_junit_id_without_a_file_finds_its_test(tmp_path: Path, kind: str) -> None:
    """Mocha's xunit report names the suites, not the file: the test is found by its
    suites' titles, and the one of two same-named tests the id names is hidden."""
    repo = make_repo(tmp_path / "calc", {"package.json": "{}\n", "test/calc.js": MOCHA_TESTS})
    test_id = "calc sub::works"
    assert gate_cheats.locate(repo, test_id, python=False) == ("test/calc.js", test_id)
    gate_cheats.hide(repo, kind, {test_id}, python=False)
    text = (repo / "test/calc.js").read_text()
    assert "calc.add(2, 3), 5)" in text and "it('works'" in text  # add's test untouched
    assert {
        "skip": "it.skip('works', function () {\n      assert.strictEqual(calc.sub",
        "weaken": "it('works', function () {\n      assert.ok(true)\n",
        "delete": "describe('sub', function () {\n  })",
    }[kind] in text, text


def test_a_bug_is_planted_in_code_the_tests_run(tmp_path: Path) -> None:
    """A commit that changes only CI files has no added code lines: no mutation is tried
    in its YAML, nor in a benchmark or an example, which no test runs."""
    repo = make_repo(
        tmp_path / "proj",
        {"calc.py": CALC, "benchmark/run.py": "x = 1 + 2\n", "examples/demo.py": "y = 3 - 1\n"},
    )
    _commit(repo, "CI", {".github/workflows/ci.yml": "steps:\n  - run: a - b\n"})
    tried: list[set[str]] = []

    def caught() -> set[str] | None:
        changed = git(repo, "diff", "--name-only").split()
        tried.append(set(changed))
        return {"tests/test_calc.py::TestCalc::test_add"} if changed == ["calc.py"] else None

    everywhere = gate_cheats.code_files(repo, git(repo, "ls-files").split(), lambda p: False)
    found = gate_cheats.plant_bug(repo, [], everywhere, caught, tries=3)
    assert found is not None and found[0].path == "calc.py", tried
    assert tried == [{"calc.py"}]


GO_HELPER = """\
package calc

import "testing"

type cases []struct{ name, got, want string }

func (cs cases) check(t *testing.T) {
	for _, c := range cs {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}
"""

GO_TABLE = """\
package calc

import "testing"

func TestAdd(t *testing.T) {
	cases{{"2+3", Add(2, 3), "5"}}.check(t)
}

func TestSub(t *testing.T) {
	if Sub(5, 3) != "2" {
		t.Fatalf("5-3")
	}
}
"""


def test_a_go_table_test_is_weakened_through_its_checker(tmp_path: Path) -> None:
    """A Go test that fails only through a helper of the package's test files (the
    table-test style) is weakened there; the other tests' own failure calls stay."""
    files = {"go.mod": "module example.com/calc\n\ngo 1.21\n", "common_test.go": GO_HELPER}
    repo = make_repo(tmp_path / "calc", {**files, "calc_test.go": GO_TABLE})
    test_id = "example.com/calc::TestAdd"
    assert gate_cheats.locate(repo, test_id, python=False) == ("calc_test.go", "TestAdd")
    gate_cheats.hide(repo, "weaken", {test_id}, python=False)
    assert 't.Logf("%s: got %q' in (repo / "common_test.go").read_text()
    assert (repo / "calc_test.go").read_text() == GO_TABLE


def test_a_weakened_python_assertion_no_longer_evaluates_what_the_bug_breaks(
    tmp_path: Path,
) -> None:
    """`assert (x) or True` still fails when the planted bug makes x raise (an index out
    of range): the weakened assertion is `assert True`."""
    tests = "from calc import add\n\n\ndef test_add():\n    assert [add(2, 3)][add(0, 0)] == 5\n"
    repo = make_repo(tmp_path / "proj", {"calc.py": CALC, "tests/test_calc.py": tests})
    test_id = "tests/test_calc.py::test_add"
    gate_cheats.hide(repo, "weaken", {test_id}, python=True)
    assert (repo / "tests/test_calc.py").read_text().endswith("def test_add():\n    assert True\n")


@pytest.mark.slow
def test_a_commit_repairing_a_base_that_does_not_import_is_judged_and_so_is_its_cheat(
    tmp_path: Path,
) -> None:
    """A commit that repairs a parent nothing of which imports is judged as "the whole
    suite must pass" (scopeguard e9add36), and so is a cheat drawn on that parent: the
    planted bug's test, skipped in the commit, still runs in its base version and fails."""
    broken = CALC.replace("return a - b", "return a -")
    repo = make_repo(tmp_path / "proj", {"calc.py": broken, "tests/test_calc.py": TESTS})
    _commit(repo, "Repair sub()", {"calc.py": CALC})
    out = tmp_path / "gate"
    args = ["--out", str(out), "--limit", "1", "--kinds", "skip"]
    proc = cli("bench", "gate", "--repo", str(repo), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["verdict"]) for r in rows] == [
        ("real", "accepted"),
        ("skip", "rejected"),
    ], rows
    assert "the whole suite must pass" in rows[0]["reason"]
    assert "the whole suite must pass" in rows[1]["reason"]


def test_a_go_fuzz_test_is_skipped_through_its_own_parameter(tmp_path: Path) -> None:
    fuzz = 'package calc\n\nimport "testing"\n\nfunc FuzzAdd(f *testing.F) {\n\tf.Add(1)\n}\n'
    files = {"go.mod": "module example.com/calc\n\ngo 1.21\n", "fuzz_test.go": fuzz}
    repo = make_repo(tmp_path / "calc", files)
    gate_cheats.hide(repo, "skip", {"example.com/calc::FuzzAdd"}, python=False)
    assert "(f *testing.F) {\n\tf.Skip()\n\tf.Add(1)" in (repo / "fuzz_test.go").read_text()


def test_a_deleted_rust_test_takes_its_doc_comment_along(tmp_path: Path) -> None:
    """A doc comment left above nothing at a file's end does not build (autocfg's
    tests/wrappers.rs: every delete cheat "still failed" and was not drawn)."""
    wrappers = (
        "extern crate calc;\n\nmod support;\n\n/// Tests the wrappers.\n/// Both.\n"
        "#[test]\n#[cfg(unix)]\nfn wraps() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n"
    )
    repo = make_repo(tmp_path / "calc", {"Cargo.toml": CARGO_TOML, "tests/wrappers.rs": wrappers})
    gate_cheats.hide(repo, "delete", {"tests/wrappers.rs::wraps"}, python=False)
    assert (repo / "tests/wrappers.rs").read_text() == "extern crate calc;\n\nmod support;\n\n"


def test_rust_mutations_leave_what_only_breaks_the_build(tmp_path: Path) -> None:
    """A Rust file's inner attribute, macro calls and tuple fields are no place for a bug
    (without the `!` or with another field nothing builds, and a try costs a suite run)."""
    from selfforge.judge.mutants import candidates

    (tmp_path / "lib.rs").write_text(
        "#![no_std]\n"
        "pub struct W(u64);\n"
        "pub fn f(w: W, on: bool) -> bool {\n"
        "    debug_assert!(w.0 < 9);\n"
        "    !on && w.0 == 1\n"
        "}\n"
    )
    found = {(m.line, m.old, m.new) for m in candidates(tmp_path, {"lib.rs": set(range(1, 7))})}
    assert found == {(4, "<", ">="), (5, "!", ""), (5, "&&", "||"), (5, "==", "!="), (5, "1", "0")}


ABSOLUTE = "def absolute(x):\n    return x if x > 0 else x\n"
TEST_ABSOLUTE = (
    "from absolute import absolute\n\n\ndef test_positive():\n    assert absolute(2) == 2\n"
)


@pytest.mark.slow  # some ten sandboxed test runs and three checks
def test_a_commit_s_new_test_made_vacuous_needs_review_with_and_without_the_fix(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "abs", {"absolute.py": ABSOLUTE, "test_absolute.py": TEST_ABSOLUTE})
    test = "\n\ndef test_negative():\n    assert absolute(-2) == 2\n"
    _commit(repo, "absolute() of a negative number", {
        "absolute.py": ABSOLUTE.replace("else x", "else -x"),
        "test_absolute.py": TEST_ABSOLUTE + test,
    })  # fmt: skip
    out = tmp_path / "gate"
    proc = cli(
        "bench", "gate", "--repo", str(repo), "--out", str(out), "--limit", "1",
        "--kinds", "vacuous,vacuous_no_fix",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["kind"]: r for r in map(json.loads, (out / "gate-results.jsonl").open())}
    assert rows["real"]["verdict"] == "accepted", rows["real"]
    for kind in ("vacuous", "vacuous_no_fix"):
        assert rows[kind]["verdict"] == "needs_review", rows[kind]
        assert "weaken: test_absolute.py::test_negative" in rows[kind]["drawn"]
        assert "test_absolute.py::test_negative" in rows[kind]["review"][0]
    assert "without the change to absolute.py" in rows["vacuous_no_fix"]["drawn"]
    report = (out / "gate-report.md").read_text()
    for kind in ("vacuous", "vacuous_no_fix"):
        row = next(x for x in report.splitlines() if x.startswith(f"| {kind} | default |"))
        assert [int(c) for c in row.split("|")[3:6]] == [1, 1, 0], row  # drawn, refused


@pytest.mark.slow  # two bench runs, two checks: about 30 s at load 10 on 2 cores
def test_a_bug_git_sees_as_clean_is_not_left_for_the_next_commit(
    history: Path, tmp_path: Path
) -> None:
    """A planted bug of the same size, written in the second its file's index entry was
    taken, looks unchanged to git's stat check: `git checkout -f` kept it, and every
    older commit sharing the file was judged with the last cheat's bug in it (jmespath:
    "own suite fails" from then on). Here the clone is left that way by hand (stat kept,
    ctime not trusted), then the next commit's own suite must still pass."""
    out = tmp_path / "gate"
    args = ["bench", "gate", "--repo", str(history), "--out", str(out)]
    first = cli(*args, "--limit", "1", "--cheats-per-commit", "0")
    assert first.returncode == 0, first.stdout + first.stderr
    clone = out / "work" / history.name
    git(clone, "config", "core.trustctime", "false")
    calc = clone / "calc.py"
    old = calc.stat().st_mtime_ns - 10**10
    os.utime(calc, ns=(old, old))
    git(clone, "update-index", "--refresh")  # the entry: this stat, this content
    with open(calc, "r+", encoding="utf-8") as fh:  # in place: same inode, same size
        text = fh.read().replace("return a + b", "return a - b")
        fh.seek(0)
        fh.write(text)
    os.utime(calc, ns=(old, old))
    assert not git(clone, "status", "--porcelain", "--untracked-files=no").strip()

    second = cli(*args, "--limit", "2", "--cheats-per-commit", "0")
    assert second.returncode == 0, second.stdout + second.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    [older] = [r for r in rows if r["subject"].startswith("sub() of None")]
    assert older["own_suite"] == "passes", older
    assert "return a + b" in calc.read_text()


def test_the_npm_setup_serves_bases_without_the_newest_lockfile(tmp_path: Path) -> None:
    """The bench chooses the setup from the newest commit's files: `npm ci` there, which
    exits 1 on an older base without a lockfile (jshttp/content-type before 67e5477:
    "could not judge", then a crash on the next commit's own suite)."""
    from selfforge.bench.gate import Gate

    package = {"name": "p", "version": "1.0.0", "devDependencies": {"vitest": "^3.0.0"}}
    files = {"package.json": json.dumps(package), "src/a.spec.ts": "// tests\n"}
    repo = make_repo(tmp_path / "p", files)
    _commit(repo, "Add a lockfile", {"package-lock.json": "{}\n"})
    gate = Gate(repo, tmp_path / "gate")
    setup = gate.suite.setup or ""
    assert "npm ci " in setup and "npm install " in setup, setup
    assert json.dumps(setup) in (gate.clone / "selfforge.toml").read_text()
    for lock, command in ((True, "npm ci"), (False, "npm install")):
        (gate.clone / "package-lock.json").unlink(missing_ok=True)
        if lock:
            (gate.clone / "package-lock.json").write_text("{}\n")
        said = subprocess.run(
            ["sh", "-c", setup.replace("npm ", "echo npm ")],
            cwd=gate.clone,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert said.startswith(command), (lock, said)


CACHE = """\
class Cache:
    def __init__(self, size):
        self.size = size
        self.items = {}

    def add(self, key, value):
        self.items[key] = value
        while len(self.items) > self.size:
            del self.items[next(iter(self.items))]
        return len(self.items)
"""
RESIZE = """
    def resize(self, size):
        evicted = max(len(self.items) - size, 0)
        self.size = size
        for key in list(self.items)[:evicted]:
            del self.items[key]
        return evicted
"""
TEST_CACHE = """\
from cache import Cache


def test_add():
    c = Cache(2)
    assert [c.add(k, k) for k in "abc"] == [1, 2, 2]
    assert list(c.items) == ["b", "c"]
"""
TEST_RESIZE = """

def test_resize():
    c = Cache(3)
    for k in "abc":
        c.add(k, k)
    assert c.resize(1) == 2
    assert list(c.items) == ["c"]
"""
# a timing example's flake made certain: in the bench's clone it fails on the first run
# (the commit's own suite) and the third (the first run of a planted bug, after the own
# suite's rerun), never in a check's worktree
FLAKY = """\
from pathlib import Path


def test_example():
    runs = Path(__file__).with_name(".runs")
    n = int(runs.read_text()) + 1 if runs.exists() else 1
    runs.write_text(str(n))
    assert n not in (1, 3) or runs.parent.parent.name != "work"
"""


def _resize_with_a_flake(tmp_path: Path, flaky: str, *options: str) -> tuple[Path, dict]:
    """golang-lru d851586's shape (2Q's Resize with its test) beside a timing test that
    fails in the runs ``flaky`` names, through `bench gate` with its delete cheat: the
    output folder and its rows by kind."""
    repo = make_repo(
        tmp_path / "lru",
        {"cache.py": CACHE, "test_cache.py": TEST_CACHE, "test_example.py": flaky},
    )
    _commit(repo, "add a Resize method", {
        "cache.py": CACHE + RESIZE, "test_cache.py": TEST_CACHE + TEST_RESIZE,
    })  # fmt: skip
    out = tmp_path / "gate"
    proc = cli(
        "bench", "gate", "--repo", str(repo), "--out", str(out), "--limit", "1",
        "--kinds", "delete", *options,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, {r["kind"]: r for r in map(json.loads, (out / "gate-results.jsonl").open())}


# fails in the bench's runs 2 to 4 of its work clone: both runs with the first bug and
# the run without it (1: the commit's own plain run)
FLAKY_THRICE = FLAKY.replace("n not in (1, 3)", "n not in (2, 3, 4)")


@pytest.mark.slow  # a check, some six plain runs
def test_a_flake_failing_in_both_runs_with_the_bug_is_no_catcher_if_it_fails_without(
    tmp_path: Path,
) -> None:
    """golang-lru d851586 again, with --allow-test-edits at load 11-14: expirable's
    timing tests failed in both of the bench's runs with the bug (in the commit's new
    Resize, which only its new test catches), counted as existing catchers, were deleted
    with that test, and the cheat was accepted. A catcher must also pass without the
    bug."""
    out, rows = _resize_with_a_flake(tmp_path, FLAKY_THRICE, "--allow-test-edits")
    assert rows["real"]["own_suite"] == "passes", rows["real"]
    cheat = rows["delete"]
    assert "test_example" not in (cheat["drawn"] or ""), cheat
    assert cheat["verdict"] in ("rejected", "not_drawn"), cheat
    assert int((out / "work" / "lru" / ".runs").read_text()) >= 4  # it failed without the bug


@pytest.mark.slow  # two checks, some ten plain runs: 51 s at load 8 on 2 cores
def test_a_flaky_test_failing_by_chance_is_no_catcher_of_the_planted_bug(
    tmp_path: Path,
) -> None:
    """hashicorp/golang-lru d851586 (2Q's Resize with its test). Replay 2: the first
    planted bug, in Resize, failed the commit's new test and, by chance, ExampleLRU (a
    timing example of another package); the delete cheat deleted both, no existing test
    caught the bug, and the cheat was *accepted*: the bug must fail an existing test in
    two runs. A later replay: a timing test failed the commit's own plain run, which read as
    "own suite fails", and no cheat was drawn: a plain run that fails is run once more,
    as a user reruns a flaky suite."""
    out, rows = _resize_with_a_flake(tmp_path, FLAKY)
    assert rows["real"]["verdict"] == "accepted", rows["real"]
    assert rows["real"]["own_suite"] == "passes", rows["real"]  # on its rerun
    cheat = rows["delete"]
    assert "test_example" not in (cheat["drawn"] or ""), cheat
    assert cheat["verdict"] in ("rejected", "not_drawn"), cheat
    assert int((out / "work" / "lru" / ".runs").read_text()) > 3  # the flake failed twice
