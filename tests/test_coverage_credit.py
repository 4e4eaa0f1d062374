"""Coverage goals count only tests that can fail (issue 42, point 7): through `selfforge
run`, a candidate's coverage is credited only for the lines its added tests run AND
check (a mutant of them makes an added test fail): a test that runs an uncovered
function and checks nothing of it does not land, the reason saying why; the same test
made to assert lands with its figures. `check` of a commit whose test only runs code
reports the credited figure and needs review."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from tests.conftest import check_json, cli, git, log_json, make_repo

PY = sys.executable
TASK = "Cover scale() with tests"
APP = """def quick():
    return 1


def scale(x):
    if x > 1:
        return x * 2
    return 0


def half(x):
    return x / 2
"""
TEST = """from app import quick


def test_quick():
    assert quick() == 1
"""
TOML = f"""[goals]
items = [{{ text = "{TASK}", measure = "cov" }}]

[checks]
test = "{PY} -m pytest -q -p no:cacheprovider"
reruns = 0

[limits]
cycles = 1
max_repairs = 1

[land]
mode = "merge"

[[measures]]
name = "cov"
kind = "coverage"
"""


def _edit(path: str, old: str, new: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n"


# It can fail (on a mutant of quick()), so the new-tests stage lets it by; it runs all
# of scale() and checks nothing of it.
RUNS_ONLY = _edit(
    "test_scale.py",
    "",
    "from app import quick, scale\n\n\ndef test_scale():\n    scale(3)\n    scale(0)\n"
    "    assert quick() == 1\n",
)
ASSERTS = _edit(
    "test_scale.py",
    "    scale(3)\n    scale(0)\n",
    "    assert scale(3) == 6\n    assert scale(0) == 0\n",
)


def _rows(repo: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        return db.execute(sql).fetchall()


def test_a_coverage_goal_credits_only_lines_the_added_tests_check(tmp_path: Path, script) -> None:
    """Round 1: a test that runs scale() and asserts nothing of it: coverage.py's figure
    goes up, the credited one does not (unchanged): refused, and told why. Round 2: the
    same test asserting scale()'s results lands, with both figures."""
    repo = make_repo(tmp_path / "r", {"app.py": APP, "test_app.py": TEST}, TOML)
    head = git(repo, "rev-parse", "HEAD")
    spec = script(propose=[RUNS_ONLY, ASSERTS])
    proc = cli("run", "--repo", str(repo), "--model", spec, "--task", TASK)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    measured = _rows(repo, "SELECT round, name, output FROM checks WHERE name LIKE 'measure%'")
    first = {name: output for round_, name, output in measured if round_ == 0}
    assert first["measure cov"].endswith(": improved"), measured  # coverage.py's figure
    # app.py alone (tests left out): 4 of its 8 statements ran, and no more are credited
    assert first["measure cov[credited]"].startswith("cov[credited]: 50 % of the code → 50 %")
    assert first["measure cov[credited]"].endswith(": unchanged"), measured
    [_, told] = [p for (p,) in _rows(repo, "SELECT prompt FROM model_calls WHERE role='propose'")]
    assert "goal measure cov[credited]: 50 % of the code → 50 % of the code" in told, told
    assert "coverage credit: 0 of 3 newly covered line(s)" in told
    assert "not credited: app.py:6-8 (run by a test, checked by none)" in told
    assert "a test that runs code without checking it adds nothing" in told

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["landed"], attempt
    reason = str(attempt["reason"])
    assert "measure cov: " in reason and ": improved" in reason, reason
    assert "cov[credited]: 50 % of the code → 87.5 % of the code, +75.0%" in reason, reason
    assert git(repo, "rev-parse", "HEAD") != head
    assert "assert scale(3) == 6" in (repo / "test_scale.py").read_text()


def test_check_reports_a_coverage_gain_no_added_test_checks(tmp_path: Path) -> None:
    """`check` has no goals: it reports the coverage measure and its credited figure; a
    commit whose new test runs half() and checks nothing of it needs review, naming the
    lines."""
    repo = make_repo(tmp_path / "r", {"app.py": APP, "test_app.py": TEST}, TOML)

    test_half = "from app import half, quick\n\n\ndef test_half():\n    half(4)\n"
    (repo / "test_half.py").write_text(test_half + "    assert quick() == 1\n")
    git(repo, "add", "test_half.py")
    git(repo, "commit", "-qm", "test half()")
    code, result = check_json(repo)
    assert code == 3, result
    measures = {m["name"]: m for m in result["measures"]}
    assert measures["cov"]["verdict"] == "improved", measures
    credited = measures["cov[credited]"]
    assert (credited["base"], credited["candidate"], credited["verdict"]) == (50, 50, "unchanged")
    [item] = [r for r in result["review"] if "cov[credited]" in r]
    assert "coverage credit: 0 of 1 newly covered line(s)" in item, item
    assert "not credited: app.py:12 (run by a test, checked by none)" in item
