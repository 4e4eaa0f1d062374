"""`selfforge check` measures which lines a change adds the tests execute (issue 41,
point 3): the ratio in the tests:coverage step and in ``--json``; a change of which no
line is run by any test needs review ("no test runs the changed code"). Python (line
probes compiled into the changed files by selfforge's pytest plugin; coverage.py for a
file imported before it), Go (``go test -coverprofile``), Node
(``node --test``, V8 coverage); Rust says it is not measured and keeps its verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, check_json, directives, git, make_repo, needs_cargo

# add() fixed: test_add runs it
FIXED = CALC.replace("return a - b", "return a + b", 1)
# a new function no test calls
UNCALLED = CALC + "\n\ndef div(a, b):\n    if b == 0:\n        return None\n    return a / b\n"


def _commit(repo: Path, files: dict[str, str], message: str = "change") -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


@pytest.fixture
def py_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def test_python_change_the_tests_run_is_accepted_with_its_ratio(py_repo: Path) -> None:
    _commit(py_repo, {"calc.py": FIXED})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"] == {
        "measured": True,
        "tool": "line probes",
        "changed_lines": 1,
        "run": 1,
        "not_run": {"calc.py": []},
    }


def test_python_change_no_test_calls_needs_review(py_repo: Path) -> None:
    _commit(py_repo, {"calc.py": UNCALLED})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 3, verdict
    assert verdict["verdict"] == "needs_review"
    [item] = verdict["review"]
    assert item == "no test runs the changed code: calc.py:14-16"
    assert verdict["coverage"]["changed_lines"] == 3 and verdict["coverage"]["run"] == 0


def test_a_new_test_that_runs_the_new_code_counts(py_repo: Path) -> None:
    """The change's own suite (tests:new) runs too: its new test covers the new code."""
    test = TEST_CALC.replace(
        "from calc import add, mul, sub", "from calc import add, div, mul, sub"
    )
    test += "\n\ndef test_div():\n    assert div(6, 3) == 2\n"
    _commit(py_repo, {"calc.py": UNCALLED, "test_calc.py": test})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 0, verdict
    # the def line only declares (run at import whatever calls it): the body counts
    assert verdict["coverage"]["changed_lines"] == 3
    assert verdict["coverage"]["run"] == 2
    assert verdict["coverage"]["not_run"] == {"calc.py": [15]}  # `return None`


def _venv_without_coverage(tmp_path: Path) -> str:
    """A Python that has pytest but no coverage.py: a venv of this one's, with coverage
    hidden by a module that fails to import."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "coverage.py").write_text("raise ImportError('hidden')\n")
    return f"PYTHONPATH={tmp_path / 'hide'} {venv}/bin/python -m pytest -q"


def test_without_coverage_py_the_changed_lines_are_measured_all_the_same(tmp_path: Path) -> None:
    """A project whose Python has no coverage.py (most have none in their test
    dependencies): the plugin's line probes measure it, and code no test calls needs
    review as anywhere else."""
    command = _venv_without_coverage(tmp_path)
    repo = make_repo(
        tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(command)
    )
    _commit(repo, {"calc.py": UNCALLED})
    code, verdict = check_json(repo, "HEAD")
    assert code == 3, verdict
    assert verdict["review"] == ["no test runs the changed code: calc.py:14-16"]
    assert verdict["coverage"]["tool"] == "line probes"


# pytest imports a `-p` plugin of the project's ini before selfforge's: too early to probe
EARLY_INI = "[pytest]\naddopts = -p calc\n"


def test_a_file_imported_before_the_plugin_is_measured_by_coverage_py(py_repo: Path) -> None:
    """A changed file pytest imported before selfforge's plugin (the project's own
    plugin, a `-p` of its ini) cannot be probed: coverage.py measures it, and the calls
    the tests make count."""
    _commit(py_repo, {"pytest.ini": EARLY_INI}, "the project's plugin")
    _commit(py_repo, {"calc.py": FIXED})
    code, verdict = check_json(py_repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"]["tool"] == "coverage.py"
    assert (verdict["coverage"]["changed_lines"], verdict["coverage"]["run"]) == (1, 1)


def test_a_file_imported_early_without_coverage_py_is_said_not_measured(tmp_path: Path) -> None:
    """Imported before the plugin, and no coverage.py to measure it: not measured, said
    with the fix; the verdict is the one the tests give."""
    command = _venv_without_coverage(tmp_path)
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "pytest.ini": EARLY_INI}
    repo = make_repo(tmp_path / "r", files, directives(command))
    _commit(repo, {"calc.py": UNCALLED})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"]["measured"] is False
    assert "coverage.py is not installed" in verdict["coverage"]["note"]
    assert "pip install coverage" in verdict["coverage"]["note"]


def test_the_tests_run_without_a_trace_function(tmp_path: Path) -> None:
    """Measuring the changed lines sets no trace function (on Python 3.11 one slows
    every line of every file, and a test of the project's own tracing breaks under it):
    a test that asserts none is set passes, and the change's line is measured run."""
    test = (
        TEST_CALC
        + "\n\ndef test_untraced():\n    import sys\n\n    assert sys.gettrace() is None\n"
    )
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": test}, directives())
    _commit(repo, {"calc.py": FIXED})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict
    assert (verdict["coverage"]["changed_lines"], verdict["coverage"]["run"]) == (1, 1)


UNITTEST_CALC = """import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def test_a_wrapped_unittest_suite_is_said_not_measured_and_why(tmp_path: Path) -> None:
    """more-itertools' shape: `make test` runs `python -m unittest -v`. The outcomes are
    read from unittest's output; no plugin ran, so no line was measured, and the note
    says that and what command would be measured (not "see the tests' output")."""
    files = {"calc.py": CALC, "test_calc.py": UNITTEST_CALC,
             "run_tests.sh": "exec python -m unittest -v\n"}  # fmt: skip
    repo = make_repo(tmp_path / "r", files, directives("sh run_tests.sh"))
    _commit(repo, {"calc.py": FIXED})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"]["measured"] is False, verdict["coverage"]
    note = verdict["coverage"]["note"]
    assert "the tests ran under unittest" in note and "python -m pytest" in note, note


# --- Go -------------------------------------------------------------------------------------

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
GO_MOD = "module example.com/mathx\n\ngo 1.19\n"
MATHX = "package mathx\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
MATHX_TEST = """package mathx

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatalf("Add(2, 3) = %d", Add(2, 3))
	}
}
"""
UNCALLED_GO = "\nfunc Div(a, b int) int {\n\tif b == 0 {\n\t\treturn 0\n\t}\n\treturn a / b\n}\n"


@pytest.fixture
def go_repo(tmp_path: Path) -> Path:
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    return make_repo(tmp_path / "repo", files, directives("go test ./..."))


@needs_go
def test_go_change_the_tests_run_is_accepted_with_its_ratio(go_repo: Path) -> None:
    _commit(go_repo, {"mathx.go": MATHX.replace("a - b", "a + b")})
    code, verdict = check_json(go_repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"]["tool"] == "go test -coverprofile"
    assert (verdict["coverage"]["changed_lines"], verdict["coverage"]["run"]) == (1, 1)


@needs_go
def test_go_change_no_test_calls_needs_review(go_repo: Path) -> None:
    _commit(go_repo, {"mathx.go": MATHX + UNCALLED_GO})
    code, verdict = check_json(go_repo, "HEAD")
    assert code == 3, verdict
    assert verdict["review"] == ["no test runs the changed code: mathx.go:8-11"]
    assert verdict["coverage"]["run"] == 0


@needs_go
def test_go_package_no_test_links_needs_review(go_repo: Path) -> None:
    """A new package no test imports: go's profile never names it; its lines count."""
    _commit(
        go_repo, {"extra/extra.go": "package extra\n\nfunc Twice(a int) int {\n\treturn 2 * a\n}\n"}
    )
    code, verdict = check_json(go_repo, "HEAD")
    assert code == 3, verdict
    assert verdict["review"] == ["no test runs the changed code: extra/extra.go:4-5"]


@needs_go
def test_go_code_its_build_constraint_leaves_out_needs_review_saying_so(go_repo: Path) -> None:
    """google/btree aeba20f's shape: a fix in the file kept for old toolchains
    (`//go:build !go1.18`), which this go never builds. Needs review, and the reason is
    the constraint, not a missing test; a file built only on another platform likewise."""
    old = "//go:build !go1.18\n\npackage mathx\n\nfunc Sub(a, b int) int {\n\treturn a + b\n}\n"
    _commit(go_repo, {"sub_old.go": old})
    _commit(go_repo, {"sub_old.go": old.replace("a + b", "a - b")})
    code, verdict = check_json(go_repo, "HEAD")
    assert code == 3, verdict
    assert verdict["review"] == [
        "no test runs the changed code: sub_old.go:6 "
        "(not built here: its build constraint is `//go:build !go1.18`)"
    ]
    windows = "package mathx\n\nfunc Sep() string {\n\treturn `\\`\n}\n"
    _commit(go_repo, {"sep_windows.go": windows})
    _commit(go_repo, {"sep_windows.go": windows.replace("`\\`", "`/`")})
    code, verdict = check_json(go_repo, "HEAD")
    assert verdict["review"] == [
        "no test runs the changed code: sep_windows.go:4 (not built here: only for windows, "
        "by its name)"
    ], verdict


@needs_go
def test_go_code_only_an_earlier_go_test_of_the_command_runs_counts(tmp_path: Path) -> None:
    """A test command of two `go test` runs, as cespare/xxhash's (`-tags purego`, then
    the default build): each rewrites the profile, so the changed pure-Go file, which
    only the first run builds, was "no test runs the changed code". Each test binary's
    profile is kept now; both runs count."""
    tagged = "//go:build {}\n\npackage mathx\n\nfunc Add(a, b int) int {{\n\treturn {}\n}}\n"
    files = {
        "go.mod": GO_MOD,
        "add_purego.go": tagged.format("purego", "a + b"),
        "add_other.go": tagged.format("!purego", "b + a"),
        "mathx_test.go": MATHX_TEST,
    }
    repo = make_repo(tmp_path / "repo", files, directives("go test -tags purego . && go test ."))
    _commit(repo, {"add_purego.go": tagged.format("purego", "b + a")})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict
    assert (verdict["coverage"]["changed_lines"], verdict["coverage"]["run"]) == (1, 1), verdict


# --- Node -----------------------------------------------------------------------------------

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
PACKAGE = '{"name": "m", "version": "1.0.0", "scripts": {"test": "node --test"}}'
MATH = "exports.add = (a, b) => a - b;\n"
MATH_TESTS = """const test = require('node:test');
const assert = require('node:assert');
const { add } = require('../math.js');

test('adds', () => {
  assert.strictEqual(add(2, 3), 5);
});
"""
UNCALLED_JS = (
    "\nexports.div = function (a, b) {\n  if (b === 0) {\n    return 0;\n  }\n  return a / b;\n};\n"
)


@pytest.fixture
def node_repo(tmp_path: Path) -> Path:
    files = {"package.json": PACKAGE, "math.js": MATH, "test/math.test.js": MATH_TESTS}
    return make_repo(tmp_path / "repo", files, directives("npm test"))


@needs_node
def test_node_change_the_tests_run_is_accepted_with_its_ratio(node_repo: Path) -> None:
    _commit(node_repo, {"math.js": MATH.replace("a - b", "a + b")})
    code, verdict = check_json(node_repo, "HEAD")
    assert code == 0, verdict
    assert verdict["coverage"]["tool"] == "node (V8 coverage)"
    assert (verdict["coverage"]["changed_lines"], verdict["coverage"]["run"]) == (1, 1)


@needs_node
def test_node_change_no_test_calls_needs_review(node_repo: Path) -> None:
    _commit(node_repo, {"math.js": MATH + UNCALLED_JS})
    code, verdict = check_json(node_repo, "HEAD")
    assert code == 3, verdict
    assert verdict["review"] == ["no test runs the changed code: math.js:3-5,7"]


# --- Rust -----------------------------------------------------------------------------------

CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
LIB = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
IT = "#[test]\nfn adds() {\n    assert_eq!(adder::add(2, 3), 5);\n}\n"


@needs_cargo
def test_rust_check_says_coverage_was_not_measured_and_keeps_its_verdict(tmp_path: Path) -> None:
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/it.rs": IT}
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    _commit(repo, {"src/lib.rs": LIB + "\npub fn twice(a: i32) -> i32 {\n    2 * a\n}\n"})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict  # no test calls twice(): not measured, so nothing said of it
    assert verdict["coverage"]["measured"] is False
    assert verdict["coverage"]["note"].startswith("not measured for Rust")


@pytest.mark.slow  # pytest-xdist's workers start in a second each
def test_python_workers_of_pytest_xdist_are_measured(tmp_path: Path) -> None:
    """Each worker measures what it runs (the controller runs no test)."""
    from conftest import PYTEST

    files = {"calc.py": CALC, "test_calc.py": TEST_CALC}
    repo = make_repo(tmp_path / "r", files, directives(PYTEST + " -p xdist -n 2"))
    _commit(repo, {"calc.py": FIXED})
    code, verdict = check_json(repo, "HEAD")
    assert code == 0, verdict
    assert (verdict["coverage"]["changed_lines"], verdict["coverage"]["run"]) == (1, 1)


@needs_go
def test_a_nested_go_module_is_not_counted_as_code_no_test_runs(go_repo: Path) -> None:
    """`go test ./...` never enters a nested module (its own go.mod): its suite is judged
    by another run, so this run's coverage says nothing of its lines."""
    nested = {"arc/go.mod": "module example.com/arc\n\ngo 1.19\n", "arc/arc.go": MATHX}
    _commit(go_repo, nested)
    _commit(go_repo, {"arc/arc.go": MATHX + UNCALLED_GO})
    _, verdict = check_json(go_repo, "HEAD")
    assert verdict["coverage"] is None, verdict
    assert "no test runs the changed code" not in str(verdict["review"])
