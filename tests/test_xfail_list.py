"""A red base made green by the change's own list of expected failures (issue 41, point
1): the base's tests fail already, and a person's commit marks exactly those as expected
to fail — through a list its conftest.py holds or a data file the suite reads. Nothing
regressed: `selfforge check` says needs review (exit 3), a line per test naming it and
what the change did to it. An xfail on a test that passed on the base and fails now
hides a regression: rejected. `run` (a model's proposal) refuses the list as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, check_json, cli, directives, git, log_json, make_repo

# the base is red: add() subtracts and mul() adds; test_sub passes
RED = CALC.replace("return a * b", "return a + b")
# the suite's own list of expected failures: a set in its conftest and a data file it reads
CONFTEST = """\
from pathlib import Path

import pytest

XFAIL = {"tests/test_calc.py::test_mul"}
KNOWN = Path(__file__).parent / "known_failures.txt"


def pytest_collection_modifyitems(items):
    known = XFAIL | set(KNOWN.read_text().split())
    for item in items:
        if item.nodeid in known:
            item.add_marker(pytest.mark.xfail(reason="known failure", strict=True))
"""
LISTED = {
    "tests/conftest.py": CONFTEST,
    "tests/known_failures.txt": "tests/test_calc.py::test_add\n",
}


def _branch(repo: Path, name: str, files: dict[str, str]) -> str:
    git(repo, "checkout", "-q", "-B", name, "main")
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"Known failures ({name})")
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    return sha


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"calc.py": RED, "tests/test_calc.py": TEST_CALC}
    extra = "[safety]\nallow_test_edits = true\n"  # run's judge sees the list, not a rule
    return make_repo(tmp_path_factory.mktemp("xfail") / "r", files, directives(extra=extra))


def test_a_red_base_xfailed_by_its_own_list_needs_review_per_test(repo: Path) -> None:
    sha = _branch(repo, "listed", LISTED)
    code, verdict = check_json(repo, sha)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    add, mul = verdict["review"]  # one line per test, each naming it and what was done
    assert add.startswith("xfails a test that already failed: tests/test_calc.py::test_add: ")
    assert "xfailed (listed in tests/known_failures.txt); failed on the base too" in add
    assert "fails the same way on the new code (assert -1 == 5" in add
    assert mul.startswith("xfails a test that already failed: tests/test_calc.py::test_mul: ")
    assert "xfailed (listed in tests/conftest.py); failed on the base too" in mul
    assert log_json(repo)[-1]["outcome"] == "needs_review"


def test_an_xfail_listed_for_a_test_that_passed_on_the_base_is_rejected(repo: Path) -> None:
    """The same list, and sub() broken with its test listed too: test_sub passed on the
    base and fails now, whatever the list says."""
    broken_sub = RED.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a + b")
    known = LISTED["tests/known_failures.txt"] + "tests/test_calc.py::test_sub\n"
    sha = _branch(
        repo, "hides", {**LISTED, "calc.py": broken_sub, "tests/known_failures.txt": known}
    )
    code, verdict = check_json(repo, sha)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "tests/test_calc.py::test_sub: passed → failed" in verdict["reason"]
    assert "test_sub: xfailed (listed in tests/known_failures.txt)" in verdict["reason"]


def test_run_still_refuses_a_model_that_xfails_the_failing_tests(repo: Path, script) -> None:
    """A model's proposal of the same list is refused (its conftest runs around the
    tests), as is one that marks the failing tests xfail in their file."""
    mark = "@pytest.mark.xfail(reason='known failure', strict=True)\n"
    marked = "import pytest\n\n" + TEST_CALC.replace("def test_add", mark + "def test_add")
    replies = [
        "".join(f"{p}\n<<<<<<< SEARCH\n=======\n{t}>>>>>>> REPLACE\n" for p, t in LISTED.items()),
        "tests/test_calc.py\n<<<<<<< SEARCH\n" + TEST_CALC + "=======\n"
        + marked.replace("def test_mul", mark + "def test_mul") + ">>>>>>> REPLACE\n",
    ]  # fmt: skip
    for reply in replies:
        cli("run", "--repo", str(repo), "--model", script(propose=[reply]), check=True)
    first, second = log_json(repo)[-2:]
    assert first["outcome"] == second["outcome"] == "rejected"  # never "needs review" in a run
    assert "tests/conftest.py, which runs around the tests" in str(first["reason"])
    assert "adds a skip, xfail or trivially true assertion" in str(second["reason"])
    assert git(repo, "show", "HEAD:tests/test_calc.py") == TEST_CALC  # nothing landed
