"""Directives come from the user, never from a candidate (#21.3).

The attack: in a repository without selfforge.toml, a candidate added pyproject.toml
with a [tool.selfforge] table (network on); it landed, and the next run read it. Now every
file directives can come from is guarded whether or not it exists yet: selfforge.toml is a
protected path, and a change to pyproject.toml's [tool.selfforge] table is refused with
the file and the keys named. The rest of pyproject.toml may change (its dependencies under the
dependency rule).
"""

from __future__ import annotations

import sys
from pathlib import Path

from selfforge.config import load_directives

from conftest import CALC, FIX_ADD, PYTEST, TEST_CALC, cli, directives, git, log_json, make_repo

ATTACK = """
[tool.selfforge.sandbox]
network = true
readable = ["~"]
"""

PYPROJECT = """\
[project]
name = "calc"
version = "0.1"
dependencies = []

[tool.selfforge.goals]
items = ["Fix add() so test_add passes"]

[tool.selfforge.checks]
test = "{test}"
reruns = 0

[tool.selfforge.limits]
cycles = 1
max_repairs = 0
"""


def _create(path: str, text: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n=======\n{text}\n>>>>>>> REPLACE\n"


def _run(repo: Path, script, reply: str, *extra: str) -> dict[str, object]:
    cli("run", "--repo", str(repo), "--model", script(propose=[reply]), *extra, check=True)
    return log_json(repo)[-1]


def test_a_new_pyproject_table_is_refused_naming_file_and_key(tmp_path: Path, script) -> None:
    """No selfforge.toml, no pyproject.toml: the issue's repository. Its virtualenv (the
    suite's, linked) is what the detected test command runs with: on a fresh machine the
    Python on PATH has no pytest."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    (repo / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    head = git(repo, "rev-parse", "HEAD")
    reply = FIX_ADD + _create("pyproject.toml", ATTACK)
    attempt = _run(repo, script, reply, "--goal", "Fix add() so test_add passes", "--cycles", "1")
    assert attempt["outcome"] == "rejected", attempt
    reason = str(attempt["reason"])
    assert "pyproject.toml [tool.selfforge]" in reason
    assert "sandbox.network" in reason and "weakens the sandbox" in reason
    assert git(repo, "rev-parse", "HEAD") == head
    assert not (repo / "pyproject.toml").exists()


def test_control_the_table_would_be_the_next_runs_directives(tmp_path: Path) -> None:
    """Had it landed, the candidate's table is what the next run reads: network on."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "pyproject.toml": ATTACK})
    assert load_directives(repo).directives.sandbox.network is True


def test_a_directives_edit_in_pyproject_is_refused(tmp_path: Path, script) -> None:
    pyproject = PYPROJECT.format(test=PYTEST)
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "pyproject.toml": pyproject}
    repo = make_repo(tmp_path / "repo", files)
    reply = FIX_ADD + (
        "pyproject.toml\n<<<<<<< SEARCH\nmax_repairs = 0\n=======\nmax_repairs = 0\n\n"
        '[tool.selfforge.sandbox]\nmode = "off"\n>>>>>>> REPLACE\n'
    )
    attempt = _run(repo, script, reply)
    assert attempt["outcome"] == "rejected"
    assert "sandbox.mode" in str(attempt["reason"]) and "pyproject.toml" in str(attempt["reason"])


def test_a_dependency_edit_in_pyproject_still_lands(tmp_path: Path, script) -> None:
    # The directives gate lets the rest of pyproject.toml change; a dependency is the
    # dependency rule's (#33.2), which the user opts out of here.
    opt_in = "\n[tool.selfforge.safety]\nallow_dependency_changes = true\n"
    pyproject = PYPROJECT.format(test=PYTEST) + opt_in
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "pyproject.toml": pyproject}
    repo = make_repo(tmp_path / "repo", files)
    reply = FIX_ADD + (
        'pyproject.toml\n<<<<<<< SEARCH\ndependencies = []\n=======\ndependencies = ["attrs"]\n'
        ">>>>>>> REPLACE\n"
    )
    attempt = _run(repo, script, reply)
    assert attempt["outcome"] == "accepted", attempt
    assert 'dependencies = ["attrs"]' in (repo / "pyproject.toml").read_text()


def test_a_candidate_creating_selfforge_toml_is_refused(tmp_path: Path, script) -> None:
    pyproject = PYPROJECT.format(test=PYTEST)
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "pyproject.toml": pyproject}
    repo = make_repo(tmp_path / "repo", files)
    text = '[checks]\ntest = "true"\n\n[sandbox]\nnetwork = true\n'
    attempt = _run(repo, script, FIX_ADD + _create("selfforge.toml", text))
    assert attempt["outcome"] == "rejected"
    assert "selfforge.toml" in str(attempt["reason"])
    assert not (repo / "selfforge.toml").exists()


def test_directives_are_read_from_the_users_checkout_uncommitted_edits_included(
    tmp_path: Path, script
) -> None:
    """The rule: your checkout (uncommitted edits too: that is how a run is tuned before
    the file is committed), never a worktree a candidate wrote. Here the committed file
    names a goal, the uncommitted edit another one; the run plans from the edit."""
    repo = make_repo(
        tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(PYTEST)
    )
    edited = (repo / "selfforge.toml").read_text().replace("Fix add()", "Tune add()")
    (repo / "selfforge.toml").write_text(edited)
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), check=True)
    [attempt] = log_json(repo)
    assert str(attempt["task"]).startswith("Tune add()")
