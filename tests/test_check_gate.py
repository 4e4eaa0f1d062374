"""`selfforge check`: the judge on changes made elsewhere — by a person or another agent —
with run's pipeline, sandbox and directives, and no model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, directives, git, log_json, make_repo

FIXED = CALC.replace("return a - b", "return a + b", 1)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def _commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def _check(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_a_good_commit_from_elsewhere_is_accepted_and_journaled(repo: Path) -> None:
    sha = _commit(repo, "Fix add()", {"calc.py": FIXED})
    proc = _check(repo, "HEAD", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "accepted" and verdict["tip"] == sha
    assert verdict["changed"] == {"calc.py": "M"}
    assert any(s["name"] == "tests" and s["passed"] for s in verdict["steps"])
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["task"] == "Fix add()"
    assert git(repo, "rev-parse", "HEAD").strip() == sha  # nothing moved
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"calc.py": FIXED.replace("a * b", "a + b")}, "test_mul"),  # breaks mul()
        (  # breaks mul() and skips its test: the base's test judges the code
            {
                "calc.py": FIXED.replace("a * b", "a + b"),
                "test_calc.py": TEST_CALC.replace(
                    "def test_mul", "import pytest\n\n\n@pytest.mark.skip\ndef test_mul"
                ),
            },
            "test_calc.py::test_mul: passed → failed",
        ),
        (  # the failing test rewritten to match the bug: its base version still fails
            {"test_calc.py": TEST_CALC.replace("== 5", "== -1")},
            "failing test(s) changed, not fixed: test_calc.py::test_add",
        ),
        (  # a conftest that forces every outcome to pass, and a broken mul()
            {
                "calc.py": FIXED.replace("a * b", "a + b"),
                "conftest.py": "def pytest_runtest_logreport(report):\n"
                "    report.outcome = 'passed'\n",
            },
            "test_calc.py::test_mul",
        ),
        (
            {
                "calc.py": FIXED
                + "\nimport _pytest.reports\n_pytest.reports.TestReport.outcome = 'passed'\n"
            },
            "integrity",
        ),
    ],
    ids=["regression", "skips-a-test", "edits-a-test-to-match", "adds-conftest", "spoofs-report"],
)
def test_a_bad_commit_is_rejected_with_its_reason(
    repo: Path, files: dict[str, str], reason: str
) -> None:
    _commit(repo, "Change calc", files)
    proc = _check(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "rejected" in proc.stdout and reason in proc.stdout
    assert log_json(repo)[-1]["outcome"] == "rejected"


def test_a_patch_on_stdin_is_judged_and_the_working_tree_is_left_alone(repo: Path) -> None:
    (repo / "calc.py").write_text(FIXED)  # uncommitted work
    diff = git(repo, "diff")
    proc = _check(repo, "-", stdin=diff)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "calc.py").read_text() == FIXED  # still the user's uncommitted change
    assert git(repo, "status", "--porcelain").strip() == "M calc.py"

    (repo / "calc.py").write_text(FIXED.replace("a * b", "a + b"))  # breaks mul()
    bad = git(repo, "diff")
    (repo / "calc.py").write_text(FIXED)
    rejected = _check(repo, "-", stdin=bad)
    assert rejected.returncode == 1 and "test_mul" in rejected.stdout
    assert (repo / "calc.py").read_text() == FIXED


def test_a_range_of_several_commits_is_judged_as_one_change(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    _commit(repo, "Break mul on the way", {"calc.py": FIXED.replace("a * b", "a + b")})
    _commit(repo, "Fix mul again", {"calc.py": FIXED})
    proc = _check(repo, f"{base}..HEAD", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the range's end state is sound
    assert json.loads(proc.stdout)["base"] == base
    assert _check(repo, "HEAD~1").returncode == 1  # the first commit alone regresses


def test_what_cannot_be_judged_exits_2_with_the_fix(repo: Path) -> None:
    missing = _check(repo, "no-such-branch")
    assert missing.returncode == 2 and "no commit named 'no-such-branch'" in missing.stderr
    stale = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def nope(a, b):\n-    x\n+    y\n"
    bad_patch = _check(repo, "-", stdin=stale)
    assert bad_patch.returncode == 2 and "does not apply" in bad_patch.stderr
    assert "Traceback" not in missing.stderr + bad_patch.stderr


def test_land_fast_forwards_an_accepted_patch(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(FIXED)
    diff = git(repo, "diff")
    git(repo, "checkout", "--", "calc.py")  # the user's tree is clean again
    proc = _check(repo, "-", "--land", stdin=diff)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    assert (repo / "calc.py").read_text() == FIXED


def test_review_adds_the_reviewers_say_when_a_model_is_given(repo: Path, tmp_path: Path) -> None:
    _commit(repo, "Fix add()", {"calc.py": FIXED})
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"review": ["REJECT: add() should handle floats too"]}))
    proc = _check(repo, "--review", "--model", f"script:{script}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "add() should handle floats too" in proc.stdout
    assert _check(repo, "--review").returncode == 2  # a review is a model's: it needs one
    assert _check(repo).returncode == 0  # without --review no model is asked
