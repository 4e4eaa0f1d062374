"""The first pass over the tests a change reaches (pytest): it runs when those tests are a
small share of the suite's measured time, and is skipped when it would run most of the
suite anyway (the suite would run the same tests again right after), or when the suite
takes under 2 s (nothing to gain). Reruns are only of the tests whose outcome changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    PYTEST,
    TEST_CALC,
    check_json,
    cli,
    directives,
    git,
    journal_test_runs,
    log_json,
    make_repo,
)

SLOW = "def wait():\n    return 1\n"
TEST_SLOW = """\
import time

from slow import wait


def test_waits():
    time.sleep(2.1)  # past the 2 s below which no first pass is worth it
    assert wait() == 1
"""


def _run(repo: Path, spec: str) -> None:
    cli("run", "--repo", str(repo), "--model", spec, check=True)


@pytest.mark.parametrize("xdist", [False, True], ids=["pytest", "pytest-xdist"])
def test_a_change_reached_by_a_small_share_of_the_suite_is_first_judged_on_it(
    tmp_path: Path, script, xdist: bool
) -> None:
    """Under pytest-xdist too: each worker parses the command line again, and must run
    only the tests the judge names (selfforge's own suite, -n 2, ran whole twice)."""
    command = PYTEST + (" -p xdist -n 2" if xdist else "")
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "slow.py": SLOW, "test_slow.py": TEST_SLOW}
    repo = make_repo(tmp_path / "repo", files, directives(command))
    _run(repo, script(propose=[FIX_ADD_BREAK_SUB]))
    assert log_json(repo)[-1]["outcome"] == "rejected"
    # refused by the first pass, before the slow test ran
    assert journal_test_runs(repo) == [("tests:affected", {"passed": 2, "failed": 1})]
    _run(repo, script(propose=[FIX_ADD]))
    assert log_json(repo)[-1]["outcome"] == "accepted"
    assert journal_test_runs(repo)[1:] == [
        ("tests:affected", {"passed": 3}),
        ("tests", {"passed": 4}),
    ]


def test_no_first_pass_when_the_change_reaches_most_of_the_suite(tmp_path: Path, script) -> None:
    """Every test imports calc, the slow one too: the first pass would be the whole suite,
    run twice."""
    slow_too = TEST_SLOW.replace("from slow import wait", "from calc import mul as wait")
    slow_too = slow_too.replace("wait() == 1", "wait(1, 1) == 1")
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_slow.py": slow_too}
    repo = make_repo(tmp_path / "repo", files, directives(PYTEST))
    _run(repo, script(propose=[FIX_ADD_BREAK_SUB]))
    assert log_json(repo)[-1]["outcome"] == "rejected"
    assert journal_test_runs(repo) == [("tests", {"passed": 3, "failed": 1})]
    _run(repo, script(propose=[FIX_ADD]))
    assert log_json(repo)[-1]["outcome"] == "accepted"
    assert journal_test_runs(repo)[1:] == [("tests", {"passed": 4})]


def test_reruns_are_only_of_the_tests_whose_outcome_changed(tmp_path: Path, script) -> None:
    """The flaky check reruns what the change flipped (test_add), once on each tree, not
    the suite."""
    repo = make_repo(
        tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(reruns=1)
    )
    _run(repo, script(propose=[FIX_ADD]))
    assert log_json(repo)[-1]["outcome"] == "accepted"
    assert journal_test_runs(repo) == [
        ("tests", {"passed": 3}),
        ("tests:rerun", {"passed": 1}),  # the candidate's tree
        ("tests:rerun", {"failed": 1}),  # the base's
    ]


def test_a_persons_check_of_a_short_suite_runs_no_first_pass(tmp_path: Path) -> None:
    """`check` judges a person's commit, right far more often than a model's proposal:
    on a suite under 10 s the first pass would only add a process start, a collection and
    the blast radius to every accepted commit, so the suite runs once. A regression is
    still refused by that one run. (Warm checks: a cold one runs the suite ahead anyway.)"""
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "slow.py": SLOW, "test_slow.py": TEST_SLOW}
    repo = make_repo(tmp_path / "repo", files, directives(PYTEST))
    base = git(repo, "rev-parse", "HEAD").strip()
    fixed = CALC.replace("return a - b", "return a + b", 1)
    (repo / "calc.py").write_text(fixed)
    git(repo, "commit", "-qam", "fix add")
    check_json(repo, "HEAD")  # cold: the base's baseline measured and cached
    code, out = check_json(repo, "HEAD")
    assert (code, out["verdict"]) == (0, "accepted"), out["reason"]
    assert [s["name"] for s in out["steps"] if str(s["name"]).startswith("tests")] == ["tests"]
    git(repo, "checkout", "-q", "-b", "other", base)  # the same base, its baseline cached
    (repo / "calc.py").write_text(fixed.replace("return a - b", "return a * b"))
    git(repo, "commit", "-qam", "break sub")
    code, out = check_json(repo, "HEAD")
    assert (code, out["verdict"]) == (1, "rejected"), out["reason"]
    assert "test_calc.py::test_sub: passed → failed" in out["reason"]
    assert [s["name"] for s in out["steps"] if str(s["name"]).startswith("tests")] == ["tests"]
