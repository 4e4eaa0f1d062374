"""A cold `selfforge check` (the baseline not cached) runs the base's suite and the judged
commit's at once when two may run (SELFFORGE_JOBS, else the cores): the journal's start
and length of each run show them overlap, and the verdict is the sequential one."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, cli, directives, git, make_repo

FIXED = CALC.replace("return a - b", "return a + b", 1)

# Two test files that take their time (each run of the suite >= 2 s, the overlap shows
# without asserting on times): a change to calc.py reaches test_calc.py alone, a share of
# the suite's time small enough for the focused first pass of a sequential check.
SLOW_TEST_CALC = TEST_CALC.replace("from calc import", "import time\n\nfrom calc import").replace(
    "    assert", "    time.sleep(0.3)\n    assert"
)
OTHER = "def one():\n    return 1\n"
TEST_OTHER = "import time\n\nfrom other import one\n\n\n" + "".join(
    f"def test_one_{i}():\n    time.sleep(0.4)\n    assert one() == 1\n\n\n" for i in range(4)
)


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def _check(repo: Path, jobs: int) -> dict[str, object]:
    proc = cli("check", "--repo", str(repo), "HEAD", "--json", env={"SELFFORGE_JOBS": str(jobs)})
    assert proc.returncode in (0, 1, 3), proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _runs(repo: Path) -> dict[str, list[tuple[float, float]]]:
    """The last check's test runs: name → [(start, end)], from the journal."""
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = db.execute(
            "SELECT name, started_at, duration_s FROM checks "
            "WHERE run_id = (SELECT max(id) FROM runs) AND name LIKE '%tests%' ORDER BY id"
        ).fetchall()
    runs: dict[str, list[tuple[float, float]]] = {}
    for name, start, seconds in rows:
        runs.setdefault(name, []).append((start, start + seconds))
    return runs


def _opened(repo: Path) -> float:
    """When the last check's attempt opened (after its baseline)."""
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        return db.execute("SELECT started_at FROM attempts ORDER BY id DESC LIMIT 1").fetchone()[0]


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.fixture
def slow_repo(tmp_path: Path) -> Path:
    files = {"calc.py": CALC, "test_calc.py": SLOW_TEST_CALC, "other.py": OTHER}
    repo = make_repo(tmp_path / "r", {**files, "test_other.py": TEST_OTHER}, directives())
    _commit(repo, "Fix add()", {"calc.py": FIXED})
    return repo


def test_a_cold_check_runs_both_suites_at_once(slow_repo: Path) -> None:
    verdict = _check(slow_repo, jobs=2)
    assert verdict["verdict"] == "accepted", verdict
    runs = _runs(slow_repo)
    [base], [candidate] = runs["baseline:tests"], runs["tests"]
    assert _overlap(base, candidate), runs
    assert candidate[0] < _opened(slow_repo)  # started before the baseline was known
    # the full run was there before its stage: no focused first pass
    assert "tests:affected" not in runs


def test_one_job_runs_them_in_turn(slow_repo: Path) -> None:
    verdict = _check(slow_repo, jobs=1)
    assert verdict["verdict"] == "accepted", verdict
    runs = _runs(slow_repo)
    [base], [candidate] = runs["baseline:tests"], runs["tests"]
    assert not _overlap(base, candidate), runs
    assert base[1] <= candidate[0]
    # a person's check of a suite under 10 s runs it once: no first pass (judge/suite_runs.py)
    assert "tests:affected" not in runs


def test_a_cached_baseline_runs_nothing_ahead(slow_repo: Path) -> None:
    _check(slow_repo, jobs=2)  # measures the base: cached for the next check
    verdict = _check(slow_repo, jobs=2)
    assert verdict["verdict"] == "accepted", verdict
    runs = _runs(slow_repo)
    assert "baseline:tests" not in runs  # nothing measured
    [candidate] = runs["tests"]
    assert candidate[0] >= _opened(slow_repo)  # run in its stage, not ahead


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"calc.py": FIXED}, "accepted"),
        ({"calc.py": FIXED.replace("a * b", "a + b")}, "rejected"),  # breaks mul()
        (  # breaks mul() and rewrites its test to match: the base's test fails on the
            # code and the change rewrote its expectation, a question for a person
            {
                "calc.py": FIXED.replace("a * b", "a + b"),
                "test_calc.py": TEST_CALC.replace("mul(4, 3) == 12", "mul(4, 3) == 7"),
            },
            "needs_review",
        ),
    ],
    ids=["fix", "regression", "rewritten-test"],
)
def test_the_verdict_is_the_sequential_one(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    _commit(repo, "a change", files)
    verdicts = []
    for jobs in (1, 2):
        shutil.rmtree(repo / ".selfforge", ignore_errors=True)  # cold each time
        verdict = _check(repo, jobs)
        verdicts.append({k: verdict[k] for k in ("verdict", "reason", "steps", "changed")})
        assert "baseline:tests" in _runs(repo)
    assert verdicts[0]["verdict"] == expected, verdicts[0]
    assert verdicts[1] == verdicts[0]


def test_a_wrong_jobs_value_is_one_line(slow_repo: Path) -> None:
    proc = cli("check", "--repo", str(slow_repo), "HEAD", env={"SELFFORGE_JOBS": "two"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "SELFFORGE_JOBS='two'" in proc.stderr and "Traceback" not in proc.stderr


def test_a_candidate_refused_before_its_tests_is_not_run_ahead(tmp_path: Path) -> None:
    """A commit with a syntax error in one module and, in the module the tests import, a
    wait that would hang the suite is refused at the syntax stage: no suite of the
    candidate's runs, none waits out its timeout (the verdict comes before the wait ends)."""
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "other.py": OTHER}
    repo = make_repo(tmp_path / "r", files, directives())
    hang = "import time\n\ntime.sleep(50)\n" + CALC
    _commit(repo, "Break it", {"calc.py": hang, "other.py": OTHER + "\ndef broken(:\n"})
    # Waiting out the hang would take 50 s; the check itself takes a few.
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), "HEAD", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "SELFFORGE_JOBS": "2"},
        timeout=40,
    )
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "rejected", verdict
    assert "syntax" in verdict["reason"], verdict
