"""A Go check runs its lint (go vet) and its tests at once when two jobs may run
(SELFFORGE_JOBS, else the cores): the journal's start and length of each show them
overlap, the verdict is the sequential one, and the lint reads a checkout the tests
cannot write. Real go, real sandbox."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from test_go_rust_caches import GO_MOD, MATHX, MATHX_TEST, _branch, _go_repo, needs_go

from conftest import directives, make_repo

# The test binary takes 1.5 s to start: long enough for the lint to run inside it.
SLOW_START = (
    'package mathx\n\nimport "time"\n\nfunc init() { time.Sleep(1500 * time.Millisecond) }\n'
)
# A vet finding (a self-assignment) that go test's own vet leaves alone: the lint gate
# refuses it, the test binary still builds.
VET_FINDING = MATHX + "\nfunc Same(a int) int {\n\ta = a\n\treturn a\n}\n"
# The candidate's code, run by the tests, cuts the finding out of mathx.go in the tree
# the tests run in: a lint reading that tree while the tests run could see it clean.
HIDE = """package mathx

import (
	"os"
	"strings"
)

func init() {
	text, err := os.ReadFile("mathx.go")
	if cut := strings.Index(string(text), "\\nfunc Same"); err == nil && cut > 0 {
		os.WriteFile("mathx.go", text[:cut+1], 0o644)
	}
}
"""


def _check(repo: Path, rev: str, jobs: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), rev, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", "SELFFORGE_JOBS": str(jobs)},
    )
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def _spans(repo: Path) -> dict[str, tuple[float, float]]:
    """The last check's lint and tests runs: name → (start, end), from the journal."""
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = db.execute(
            "SELECT name, started_at, duration_s FROM checks "
            "WHERE attempt_id = (SELECT max(id) FROM attempts) AND name IN ('lint', 'tests')"
        ).fetchall()
    return {name: (start, start + seconds) for name, start, seconds in rows}


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = _go_repo(tmp_path, {"start_test.go": SLOW_START})
    _branch(repo, "fix", {"mathx.go": MATHX.replace("a + b", "b + a")})
    return repo


@needs_go
def test_go_vet_runs_while_the_tests_run(repo: Path) -> None:
    verdict = _check(repo, "fix", jobs=2)
    assert verdict["verdict"] == "accepted", verdict
    spans = _spans(repo)
    assert _overlap(spans["lint"], spans["tests"]), spans
    names = [s["name"] for s in verdict["steps"]]
    assert names.count("lint") == 1 and names.count("tests") == 1, names


@needs_go
def test_one_job_runs_the_lint_first(repo: Path) -> None:
    verdict = _check(repo, "fix", jobs=1)
    assert verdict["verdict"] == "accepted", verdict
    spans = _spans(repo)
    assert spans["lint"][1] <= spans["tests"][0], spans


@needs_go
@pytest.mark.parametrize(
    "change",
    [{"mathx.go": VET_FINDING}, {"mathx.go": VET_FINDING, "hide.go": HIDE}],
    ids=["vet-finding", "finding-hidden-by-the-running-tests"],
)
def test_a_lint_finding_is_refused_as_in_turn(tmp_path: Path, change: dict[str, str]) -> None:
    # The tests' binary runs 6 s, the lint reads from 3 s on: a lint reading the tests'
    # tree while they run would find the finding cut out.
    files = {"go.mod": GO_MOD, "mathx.go": MATHX, "mathx_test.go": MATHX_TEST}
    repo = make_repo(
        tmp_path / "slow",
        {**files, "start_test.go": SLOW_START.replace("1500", "6000")},
        directives("go test ./...", lint="sleep 3; go vet ./..."),
    )
    _branch(repo, "bad", change)
    verdicts = []
    for jobs in (1, 2):
        verdict = _check(repo, "bad", jobs)
        verdicts.append({k: verdict[k] for k in ("verdict", "reason", "steps")})
        assert "tests" not in _spans(repo)  # refused at the lint: no test run journaled
    assert verdicts[0]["verdict"] == "rejected" and "lint" in verdicts[0]["reason"], verdicts
    assert [s["name"] for s in verdicts[1]["steps"]] == [s["name"] for s in verdicts[0]["steps"]]
    assert verdicts[1]["reason"] == verdicts[0]["reason"]


NEW_TEST = (
    MATHX_TEST
    + '\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 2) != 1 {\n\t\tt.Fatal("Sub")\n\t}\n}\n'
)
SUB = MATHX + "\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n"


@needs_go
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"mathx.go": SUB, "mathx_test.go": NEW_TEST}, "accepted"),  # a test added in place
        (  # a bug, and the test that shows it weakened: the base's test judges the code
            {
                "mathx.go": MATHX.replace("a + b", "a - b"),
                "mathx_test.go": MATHX_TEST.replace("Add(2, 3) != 5", "Add(2, 3) == 99"),
            },
            "rejected",
        ),
    ],
    ids=["test-added", "weakened-test"],
)
def test_a_change_to_the_tests_is_judged_as_in_turn(
    repo: Path, change: dict[str, str], expected: str
) -> None:
    """The run ahead is the judged commit's (the base's tests on the change's code); the
    change's own suite still runs after it."""
    _branch(repo, "tests", change)
    verdicts = []
    for jobs in (1, 2):
        verdict = _check(repo, "tests", jobs)
        verdicts.append({k: verdict[k] for k in ("verdict", "reason", "steps")})
    assert verdicts[0]["verdict"] == expected, verdicts[0]
    assert [s["name"] for s in verdicts[1]["steps"]] == [s["name"] for s in verdicts[0]["steps"]]
    assert verdicts[1]["reason"] == verdicts[0]["reason"]
