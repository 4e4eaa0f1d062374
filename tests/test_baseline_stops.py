"""The baseline stops what cannot run (#33.6): a toolchain that does not start, a suite
that collects nothing, a crate, package or test suite of which nothing builds or
imports. The run ends before the first model call (no `propose` journaled) with the
runner's own words and the fix; `selfforge check` says the same with exit 2. A base
where some tests fail, one package of several that does not build, or tests written
before the code they call still reach the model: that is what a task is for."""

from __future__ import annotations

import json
import shutil
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import PYTEST, cli, directives, git, make_repo, needs_cargo

FIX = "x.py\n<<<<<<< SEARCH\n=======\n\n>>>>>>> REPLACE\n"  # never applied: never asked for
NEEDS_CARGO = pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
NEEDS_GO = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")


def _node_major() -> int:
    if shutil.which("node") is None:
        return 0
    out = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    return int(out.strip().lstrip("v").split(".")[0] or 0)


NEEDS_NODE = pytest.mark.skipif(_node_major() < 20, reason="needs node 20 or later")


def _proposals(repo: Path) -> int:
    """How many `propose` calls the run journaled (no journal: none)."""
    db = repo / ".selfforge" / "journal.db"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("SELECT COUNT(*) FROM model_calls WHERE role = 'propose'").fetchone()
    return int(n)


def _run(repo: Path, script, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    spec = script(propose=[FIX])
    return cli("run", "--repo", str(repo), "--model", spec, "--task", "Fix it", env=env)


def _stops(repo: Path, script, *words: str, env: dict[str, str] | None = None) -> str:
    proc = _run(repo, script, env)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said
    assert _proposals(repo) == 0, said
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert "Traceback" not in said
    return proc.stderr


def _reaches_the_model(repo: Path, script) -> None:
    proc = _run(repo, script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _proposals(repo) >= 1, proc.stdout + proc.stderr


# --- Rust ------------------------------------------------------------------------------

CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
LIB = """pub fn add(a: i32, b: i32) -> i32 {
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
    fn zero() {
        assert_eq!(add(0, 0), 0);
    }
}
"""
RUSTUP_SAYS = (
    "error: rustup could not choose a version of cargo to run, because one wasn't specified "
    "explicitly, and no default is configured.\n"
    "help: run 'rustup default stable' to download the latest stable release of Rust and "
    "set it as your default toolchain.\n"
)


def _crate(tmp_path: Path, lib: str = LIB, test: str = "cargo test --offline") -> Path:
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": lib}
    return make_repo(tmp_path / "repo", files, directives(test))


def test_a_cargo_whose_rustup_has_no_toolchain_stops_before_the_model(
    tmp_path: Path, script
) -> None:
    """rustup's proxy, first on PATH, with no toolchain to choose (its own words)."""
    fake = f"#!/bin/sh\ncat >&2 <<'EOF'\n{RUSTUP_SAYS}EOF\nexit 1\n"
    repo = _crate(tmp_path, test='PATH="$PWD/bin:$PATH" cargo test')
    (repo / "bin").mkdir()
    (repo / "bin" / "cargo").write_text(fake)
    (repo / "bin" / "cargo").chmod(0o755 | stat.S_IEXEC)
    git(repo, "add", "bin/cargo")
    git(repo, "commit", "-qm", "a cargo that cannot choose a toolchain")
    said = _stops(repo, script, "rustup could not choose a version of cargo", "rustup default")
    assert 'RUSTUP_TOOLCHAIN"]' in said


@NEEDS_CARGO
@pytest.mark.skipif(shutil.which("rustup") is None, reason="needs rustup")
def test_the_real_rustup_with_no_toolchain_stops_before_the_model(tmp_path: Path, script) -> None:
    empty = tmp_path / "rustup-home"
    empty.mkdir()
    repo = _crate(tmp_path)
    _stops(
        repo,
        script,
        "no default is configured",
        "rustup default stable",
        env={"RUSTUP_HOME": str(empty)},
    )


@needs_cargo
def test_a_crate_whose_code_does_not_compile_stops_before_the_model(tmp_path: Path, script) -> None:
    repo = _crate(tmp_path, LIB.replace("    a - b\n}", "    a - \n}", 1))
    _stops(repo, script, "the crate does not compile", "src/lib.rs:")


@needs_cargo
def test_a_crate_with_a_failing_test_reaches_the_model(tmp_path: Path, script) -> None:
    _reaches_the_model(_crate(tmp_path), script)


@needs_cargo
def test_a_crate_whose_tests_call_code_not_written_yet_reaches_the_model(
    tmp_path: Path, script
) -> None:
    first = LIB.replace("assert_eq!(add(0, 0), 0)", "assert_eq!(double(2), 4)")
    _reaches_the_model(_crate(tmp_path, first), script)


# --- Go --------------------------------------------------------------------------------

GO_MOD = "module example.com/mathx\n\ngo 1.19\n"
MATHX = "package mathx\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
MATHX_TEST = """package mathx

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatalf("Add(2, 3) = %d", Add(2, 3))
	}
}

func TestZero(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("Add(0, 0)")
	}
}
"""


def _module(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    base = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    return make_repo(tmp_path / "repo", {**base, **(files or {})}, directives("go test ./..."))


@NEEDS_GO
def test_a_go_module_whose_only_package_does_not_build_stops_before_the_model(
    tmp_path: Path, script
) -> None:
    repo = _module(tmp_path, {"mathx.go": MATHX.replace("a - b", "a -")})
    _stops(repo, script, "the package does not build", "mathx.go:")


@NEEDS_GO
def test_go_with_no_go_mod_stops_before_the_model(tmp_path: Path, script) -> None:
    files = {"mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    repo = make_repo(tmp_path / "repo", files, directives("go test ./..."))
    _stops(repo, script, "main module", "go mod init")


@NEEDS_GO
def test_a_go_module_with_a_failing_test_reaches_the_model(tmp_path: Path, script) -> None:
    _reaches_the_model(_module(tmp_path), script)


@NEEDS_GO
def test_one_go_package_of_two_that_does_not_build_reaches_the_model(
    tmp_path: Path, script
) -> None:
    broken = "package other\n\nfunc Broken() int {\n\treturn undefined\n}\n"
    other_test = 'package other\n\nimport "testing"\n\nfunc TestB(t *testing.T) { Broken() }\n'
    _reaches_the_model(
        _module(tmp_path, {"other/other.go": broken, "other/other_test.go": other_test}), script
    )


@NEEDS_GO
def test_go_tests_that_call_code_not_written_yet_reach_the_model(tmp_path: Path, script) -> None:
    first = MATHX_TEST.replace("Add(0, 0) != 0", "Double(2) != 4")
    _reaches_the_model(_module(tmp_path, {"mathx_test.go": first}), script)


# --- Node ------------------------------------------------------------------------------

MATH_JS = "exports.add = (a, b) => a - b;\n"
MATH_TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { add } = require('../math.js');

test('adds', () => assert.strictEqual(add(2, 3), 5));
test('zero', () => assert.strictEqual(add(0, 0), 0));
"""


def _node_project(tmp_path: Path, test: str, script_line: str = "node --test", extra: str = ""):
    package = json.dumps({"name": "m", "version": "1.0.0", "scripts": {"test": script_line}})
    files = {"package.json": package, "math.js": MATH_JS, "test/math.test.js": MATH_TEST_JS}
    return make_repo(tmp_path / "repo", files, directives(test, extra=extra))


def test_node_missing_from_the_path_stops_before_the_model(tmp_path: Path, script) -> None:
    repo = _node_project(tmp_path, "env PATH=/nowhere node --test")
    _stops(repo, script, "node", "No such file", "install Node.js")


def test_a_test_script_naming_a_missing_tool_stops_before_the_model(tmp_path: Path, script) -> None:
    if shutil.which("npm") is None:
        pytest.skip("needs npm")
    junit = '[checks]\nrunner = "junit"\njunit = "junit.xml"\n'
    repo = _node_project(tmp_path, "npm test", "no-such-test-tool --ci")
    text = (repo / "selfforge.toml").read_text().replace("[checks]\n", junit, 1)
    (repo / "selfforge.toml").write_text(text)
    git(repo, "commit", "-qam", "junit")
    _stops(repo, script, "no-such-test-tool: not found", "`no-such-test-tool` is not on PATH")


@NEEDS_NODE
def test_a_node_project_with_a_failing_test_reaches_the_model(tmp_path: Path, script) -> None:
    _reaches_the_model(_node_project(tmp_path, "node --test"), script)


# --- pytest ----------------------------------------------------------------------------

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = (
    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)


def _py(tmp_path: Path, files: dict[str, str]) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, **files}, directives(PYTEST))


def test_a_pytest_project_that_collects_no_test_stops_before_the_model(
    tmp_path: Path, script
) -> None:
    repo = _py(tmp_path, {"test_calc.py": "from calc import add\n"})
    _stops(repo, script, "collected no tests", "no tests ran")


def test_a_pytest_suite_of_which_no_module_imports_stops_before_the_model(
    tmp_path: Path, script
) -> None:
    missing = "import no_such_dependency\n" + TEST_CALC
    repo = _py(tmp_path, {"test_calc.py": missing, "test_more.py": missing})
    _stops(repo, script, "every test module fails to import", "no_such_dependency")


def test_check_says_it_cannot_judge_with_the_same_message(tmp_path: Path) -> None:
    missing = "import no_such_dependency\n" + TEST_CALC
    repo = _py(tmp_path, {"test_calc.py": missing})
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    git(repo, "commit", "-qam", "fix add")
    proc = cli("check", "--repo", str(repo))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "every test module fails to import" in proc.stderr
    assert "no_such_dependency" in proc.stderr


def test_a_pytest_project_with_a_failing_test_reaches_the_model(tmp_path: Path, script) -> None:
    _reaches_the_model(_py(tmp_path, {"test_calc.py": TEST_CALC}), script)


def test_pytest_tests_written_before_their_code_reach_the_model(tmp_path: Path, script) -> None:
    first = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    _reaches_the_model(_py(tmp_path, {"test_mul.py": first}), script)


@NEEDS_GO
def test_a_run_stopped_at_its_baseline_is_closed_in_the_journal(tmp_path: Path, script) -> None:
    """The run's row says how it ended ('failed', with the baseline's message), not
    'running' until a later run's recovery calls its process dead."""
    repo = _module(tmp_path, {"mathx.go": MATHX.replace("a - b", "a -")})
    _stops(repo, script, "the package does not build")
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as conn:
        status, reason = conn.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert status == "failed", (status, reason)
    assert "does not build" in reason
