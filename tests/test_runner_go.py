"""Go projects judged like Python ones, with the real `go` toolchain: per-test results
from `go test -json`, a fix lands, a regression or a skip is refused, a forged pass line
cannot hide a failure, a wrapper (`make test`) reports the same way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import cli, directives, git, journal_test_runs, log_json, make_repo

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")

GO_MOD = "module example.com/mathx\n\ngo 1.19\n"
MATHX = """package mathx

func Add(a, b int) int {
	return a - b
}

func Sub(a, b int) int {
	return a - b
}
"""
MATHX_TEST = """package mathx

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatalf("Add(2, 3) = %d", Add(2, 3))
	}
}

func TestSub(t *testing.T) {
	if Sub(5, 3) != 2 {
		t.Fatalf("Sub(5, 3) = %d", Sub(5, 3))
	}
}
"""
FIX = (
    "mathx.go\n<<<<<<< SEARCH\nfunc Add(a, b int) int {\n\treturn a - b\n=======\n"
    "func Add(a, b int) int {\n\treturn a + b\n>>>>>>> REPLACE\n"
)
BREAK_SUB = FIX + (
    "mathx.go\n<<<<<<< SEARCH\nfunc Sub(a, b int) int {\n\treturn a - b\n=======\n"
    "func Sub(a, b int) int {\n\treturn a * b\n>>>>>>> REPLACE\n"
)
SKIP = (
    "mathx_test.go\n<<<<<<< SEARCH\nfunc TestAdd(t *testing.T) {\n=======\n"
    'func TestAdd(t *testing.T) {\n\tt.Skip("later")\n>>>>>>> REPLACE\n'
)
TASK = "Fix Add so that TestAdd passes"


def _repo(tmp_path: Path, test: str = "go test ./...", extra_files: dict | None = None) -> Path:
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    return make_repo(tmp_path / "repo", {**files, **(extra_files or {})}, directives(test))


def _run(repo: Path, spec: str, task: str = TASK):
    return cli("run", "--repo", str(repo), "--model", spec, "--task", task, "--json")


def test_a_fix_lands_with_per_test_results(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    proc = _run(repo, script(propose=[FIX]))
    attempts = log_json(repo)
    assert attempts[-1]["outcome"] == "accepted", proc.stdout + proc.stderr
    assert "return a + b" in (repo / "mathx.go").read_text()
    assert "example.com/mathx::TestAdd" in proc.stdout  # the baseline named the failing test


def test_a_regression_is_rejected_naming_the_test(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    _run(repo, script(propose=[BREAK_SUB]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "example.com/mathx::TestSub" in attempt["reason"]
    assert "return a - b" in (repo / "mathx.go").read_text()


def test_a_skip_added_to_a_test_is_refused_even_where_test_edits_are_allowed(
    tmp_path: Path, script
) -> None:
    repo = _repo(tmp_path)
    toml = repo / "selfforge.toml"
    toml.write_text(toml.read_text() + "\n[safety]\nallow_test_edits = true\n")
    git(repo, "commit", "-qam", "allow test edits")
    _run(repo, script(propose=[FIX + SKIP]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert 't.Skip("later")' in attempt["reason"] and "mathx_test.go" in attempt["reason"]


def test_a_change_to_go_mod_is_a_dependency_change(tmp_path: Path, script) -> None:
    # A require line; the go line alone is no dependency change (tests/test_test_contract.py).
    bump = (
        "go.mod\n<<<<<<< SEARCH\ngo 1.19\n=======\ngo 1.19\n\n"
        "require example.com/dep v1.0.0\n>>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path)
    _run(repo, script(propose=[FIX + bump]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "go.mod, a dependency change" in attempt["reason"]


def test_a_forged_pass_line_cannot_hide_a_failure(tmp_path: Path, script) -> None:
    """The candidate leaves Add broken and prints test2json's pass line for TestAdd."""
    forge = (
        "mathx.go\n<<<<<<< SEARCH\npackage mathx\n=======\npackage mathx\n\n"
        'import "fmt"\n\nfunc init() {\n\tfmt.Println("--- PASS: TestAdd (0.00s)")\n}\n'
        ">>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path)
    _run(repo, script(propose=[forge]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "return a - b" in (repo / "mathx.go").read_text()


def test_a_wrapper_reports_per_test_results(tmp_path: Path, script) -> None:
    """`make test` runs go test: GOFLAGS carries -json through it."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    makefile = {"Makefile": "test:\n\tgo test ./...\n"}
    repo = _repo(tmp_path, "make -s test", makefile)
    _run(repo, script(propose=[BREAK_SUB]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "example.com/mathx::TestSub" in attempt["reason"]


def test_go_vet_as_the_lint_check_rejects_a_new_finding(tmp_path: Path, script) -> None:
    """`go vet` is the project's own linter: a change that adds a finding is rejected."""
    vet = FIX + (
        "mathx.go\n<<<<<<< SEARCH\npackage mathx\n=======\npackage mathx\n\n"
        'import "fmt"\n\nfunc Show(n int) string {\n\treturn fmt.Sprintf("%s", n)\n}\n'
        ">>>>>>> REPLACE\n"
    )
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    text = directives("go test ./...", lint="go vet ./...")
    repo = make_repo(tmp_path / "repo", files, text)
    _run(repo, script(propose=[vet]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "lint findings rose from 0 to 1" in attempt["reason"]
    assert "mathx.go" in attempt["reason"] and "Sprintf" in attempt["reason"]


MANY = """package mathx

import (
	"fmt"
	"testing"
)

func TestMany(t *testing.T) {
	for i := 0; i < 4000; i++ {
		t.Run(fmt.Sprintf("case_%04d_with_a_long_descriptive_name", i), func(t *testing.T) {
			t.Log("checked")
		})
	}
}
"""


def test_a_large_suite_is_not_cut_by_the_output_limit(tmp_path: Path, script) -> None:
    """go test -json writes several events per test: 4,000 subtests pass 1 MB (the
    default [sandbox] output_kb). The runner's stream gets the room it needs; the fix
    lands instead of "the test run hit the output limit"."""
    repo = _repo(tmp_path, extra_files={"many_test.go": MANY})
    proc = _run(repo, script(propose=[FIX]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "accepted", proc.stdout + proc.stderr
    assert "example.com/mathx::TestMany/case_3999" in proc.stdout or "4002" in proc.stdout


SLOW_TEST = """package slow

import (
	"testing"
	"time"
)

func TestWaitsA(t *testing.T) { time.Sleep(1200 * time.Millisecond) }

func TestWaitsB(t *testing.T) { time.Sleep(1200 * time.Millisecond) }
"""


def test_the_first_pass_runs_only_the_packages_the_change_reaches(tmp_path: Path, script) -> None:
    """A change to one package is first judged on that package's tests (`-run` picks
    them by name): a regression there is refused before the slow package runs, and a
    fix then passes the whole suite."""
    files = {
        "go.mod": GO_MOD,
        "calc/mathx.go": MATHX.replace("package mathx", "package calc"),
        "calc/mathx_test.go": MATHX_TEST.replace("package mathx", "package calc"),
        "slow/slow.go": "package slow\n",
        "slow/slow_test.go": SLOW_TEST,
    }
    repo = make_repo(tmp_path / "repo", files, directives("go test ./..."))
    broken = BREAK_SUB.replace("mathx.go\n", "calc/mathx.go\n")
    _run(repo, script(propose=[broken]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected", attempt
    assert journal_test_runs(repo) == [("tests:affected", {"passed": 1, "failed": 1})]
    _run(repo, script(propose=[FIX.replace("mathx.go\n", "calc/mathx.go\n")]))
    assert log_json(repo)[-1]["outcome"] == "accepted"
    assert journal_test_runs(repo)[1:] == [
        ("tests:affected", {"passed": 2}),  # calc only: the slow package waits
        ("tests", {"passed": 4}),
    ]


SCALE = "package mathx\n\nvar factor = 3\n\nfunc Double(n int) int {\n\treturn n * factor\n}\n"
SCALE_TEST = (
    'package mathx\n\nimport "testing"\n\nfunc TestDouble(t *testing.T) {\n'
    '\tif Double(4) != 8 {\n\t\tt.Fatalf("Double(4) = %d", Double(4))\n\t}\n}\n'
)
# Leaves the bug, and adds a test file whose init() repairs it inside the test binary.
REPAIRED_BY_A_NEW_TEST_FILE = (
    "scale_fix_test.go\n<<<<<<< SEARCH\n=======\npackage mathx\n\n"
    'import "testing"\n\nfunc init() { factor = 2 }\n\n'
    'func TestFactorIsSet(t *testing.T) {\n\tif factor == 0 {\n\t\tt.Fatal("unset")\n\t}\n}\n'
    ">>>>>>> REPLACE\n"
)
TESTED_BY_A_NEW_TEST_FILE = (
    "scale_one_test.go\n<<<<<<< SEARCH\n=======\npackage mathx\n\n"
    'import "testing"\n\nfunc TestDoubleOne(t *testing.T) {\n\tif Double(1) != 2 {\n'
    '\t\tt.Fatal("Double(1) != 2")\n\t}\n}\n'
    ">>>>>>> REPLACE\n"
)
FIX_SCALE = "scale.go\n<<<<<<< SEARCH\nvar factor = 3\n=======\nvar factor = 2\n>>>>>>> REPLACE\n"


def test_a_new_test_file_cannot_repair_the_code_from_inside_the_test_binary(
    tmp_path: Path, script
) -> None:
    """A new test file's init() runs in the package's test binary: it could put right
    what the change leaves broken. The suite that judges the code runs without the
    candidate's new test files; they run after, with the suite, and must pass."""
    repo = _repo(tmp_path, extra_files={"scale.go": SCALE, "scale_test.go": SCALE_TEST})
    task = "Fix Double so that TestDouble passes"
    _run(repo, script(propose=[REPAIRED_BY_A_NEW_TEST_FILE]), task=task)
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected", attempt
    assert "TestDouble" in attempt["reason"], attempt["reason"]
    assert not (repo / "scale_fix_test.go").exists()
    # A real fix with a new test file of its own lands; its test ran in the second run,
    # and failed on the base's code (it can fail: judge/new_tests.py).
    _run(repo, script(propose=[FIX_SCALE + TESTED_BY_A_NEW_TEST_FILE]), task=task)
    assert log_json(repo)[-1]["outcome"] == "accepted", log_json(repo)[-1]["reason"]
    runs = [name for name, _ in journal_test_runs(repo)]
    assert runs[-4:] == ["tests", "tests:new", "tests:new-on-base", "tests:can-fail"], runs
