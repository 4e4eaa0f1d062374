"""The baseline is measured once per (tree, directives, environment) and reused by later
runs; anything that could change its results measures it again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, make_repo


def _baseline(repo: Path, spec: str, env: dict[str, str] | None = None) -> str:
    proc = cli("run", "--repo", str(repo), "--model", spec, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    steps = [e for e in events if e["event"] == "step" and e["name"] == "baseline"]
    return " | ".join(e["detail"] for e in steps)


def test_a_second_run_on_the_same_tree_reuses_the_baseline(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    first = _baseline(repo, script())
    assert "cached" not in first and "tests: 3 collected" in first
    second = _baseline(repo, script())
    assert second.startswith("cached: tests: 3 collected, 2 passed, 1 failed")

    # A cached baseline judges as a measured one: the fix lands, and the tree it made is new.
    assert _baseline(repo, script(propose=[FIX_ADD])).startswith("cached:")
    assert "return a + b" in (repo / "calc.py").read_text()
    # The landed change's own full checks are the new tree's baseline: reused, not rerun.
    after = _baseline(repo, script())
    assert after.startswith("cached: tests: 3 collected, 3 passed, 0 failed"), after


def test_a_landed_change_with_new_test_files_is_measured_again(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    new_test = (
        "test_more.py\n<<<<<<< SEARCH\n=======\nfrom calc import add\n\n\n"
        "def test_more():\n    assert add(2, 2) == 4\n>>>>>>> REPLACE\n"
    )
    _baseline(repo, script(propose=[FIX_ADD + "\n" + new_test]))
    assert (repo / "test_more.py").exists()
    # The judging run left test_more.py out: its checks did not see the whole tree.
    assert "cached" not in _baseline(repo, script())


def test_what_could_change_the_results_measures_again(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(env=("CALC_MODE",)),
    )
    assert "cached" not in _baseline(repo, script(), env={"CALC_MODE": "a"})
    assert _baseline(repo, script(), env={"CALC_MODE": "a"}).startswith("cached:")
    # A variable the checks see has another value: the tests may behave otherwise.
    assert "cached" not in _baseline(repo, script(), env={"CALC_MODE": "b"})

    # An entry older than the cache's age limit is measured again.
    for entry in (repo / ".selfforge" / "baseline-cache").glob("*.json"):
        data = json.loads(entry.read_text())
        data["at"] -= 13 * 3600
        entry.write_text(json.dumps(data))
    assert "cached" not in _baseline(repo, script(), env={"CALC_MODE": "b"})
