"""The baseline is measured once per (tree, directives, environment) and reused by later
runs; anything that could change its results measures it again."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from conftest import CALC, FIX_ADD, PYTEST, TEST_CALC, cli, directives, git, make_repo


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


def test_the_first_attempt_is_prepared_while_the_baseline_runs(tmp_path: Path) -> None:
    """A run with no cached baseline checks out the attempt's worktree and builds its index
    while the baseline's tests run (off the path of a first run); what that work raises is
    ignored, and the baseline is the same."""
    import time

    from selfforge.config import load_directives
    from selfforge.context.index import open_index
    from selfforge.journal.store import Journal
    from selfforge.models import from_spec
    from selfforge.repo.workspace import Workspace
    from selfforge.run.baselines import measure_baseline, prewarm_attempt
    from selfforge.run.engine import make_engine
    from selfforge.ui.reporters import SilentReporter

    slow = "sleep 1.5 && " + PYTEST
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(slow))
    base = git(repo, "rev-parse", "HEAD").strip()
    ws = Workspace(repo)
    journal = Journal(ws.state / "journal.db")
    run_id = journal.start_run(
        pid=os.getpid(), base_branch="main", base_commit=base, model="script", goals=[],
        land_mode="merge",
    )  # fmt: skip
    spec = tmp_path / "script.json"
    spec.write_text("{}")
    engine = make_engine(
        ws, load_directives(repo), journal, from_spec(f"script:{spec}"), SilentReporter(), run_id
    )
    spans: dict[str, float] = {}

    def meanwhile() -> None:
        spans["start"] = time.monotonic()
        prewarm_attempt(engine, base)
        spans["end"] = time.monotonic()

    started = time.monotonic()
    observed = measure_baseline(engine, base, meanwhile)
    took = time.monotonic() - started
    assert observed.tests is not None and observed.tests.failing == {"test_calc.py::test_add"}
    assert spans["end"] - started < took - 1.0  # done while the tests still slept
    assert (ws.worktrees / "attempt" / "calc.py").read_text() == CALC
    index = open_index(ws.state)
    try:
        paths = {row[0] for row in index.conn.execute("SELECT path FROM files")}
        assert {"calc.py", "test_calc.py"} <= paths
    finally:
        index.close()
    shutil.rmtree(ws.state / "baseline-cache")  # measured again, with work that fails

    def broken() -> None:
        raise RuntimeError("boom")

    again = measure_baseline(engine, base, broken)
    assert again.tests is not None and again.tests.failing == observed.tests.failing
