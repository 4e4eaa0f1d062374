"""`selfforge check` reports the measures (issue 42, point 5): base and candidate
measured after the other gates; a measure worse by at least its min_change makes the
verdict needs review (exit 3) by default, rejected with on_worse = "reject", and is
only reported with "report"; `--json` carries `measures`."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import check_json, cli, git, make_repo

PY = sys.executable
WORK = """def work(n):
    total = 0
    for i in range(n * 2):
        total += i * i
    return total
"""
BENCH = """import time
from work import work

best = float("inf")
for _ in range(15):  # the best of 15 calls: steady on a busy machine
    start = time.perf_counter()
    work(30000)
    best = min(best, time.perf_counter() - start)
print(f"{best * 1000:.3f}")
"""
TEST = "from work import work\n\n\ndef test_work():\n    assert work(2) >= 1\n"


def _repo(tmp_path: Path, measures: str) -> Path:
    directives = f'[checks]\ntest = "{PY} -m pytest -q"\ntimeout_s = 120\n\n{measures}'
    files = {"work.py": WORK, "bench.py": BENCH, "test_work.py": TEST}
    return make_repo(tmp_path / "r", files, directives)


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def test_a_benchmark_made_slower_needs_review_naming_it_worse(tmp_path: Path) -> None:
    """A commit that makes work() 1.5x slower passes every test: check exits 3, the
    measure named worse with its figures, in --json's measures and in the text."""
    measures = (
        f'[[measures]]\nname = "work"\ncommand = "{PY} bench.py"\nunit = "ms"\nmax_runs = 60\n'
    )
    repo = _repo(tmp_path, measures)
    _commit(repo, {"work.py": WORK.replace("n * 2", "n * 3")}, "work: more of it")
    code, result = check_json(repo)
    assert code == 3, result.get("measures")
    assert result["verdict"] == "needs_review"
    [work] = result["measures"]
    assert work["name"] == "work" and work["verdict"] == "worse", work
    assert {"base", "candidate", "change", "low", "high", "runs"} <= set(work)
    assert work["candidate"] > work["base"] and work["low"] > 0.05
    assert any("measure work:" in item and "worse" in item for item in result["review"])

    proc = cli("check", "--repo", str(repo))
    assert proc.returncode == 3
    assert "measures:" in proc.stdout and "work: " in proc.stdout and ": worse" in proc.stdout


def test_on_worse_reject_and_report(tmp_path: Path) -> None:
    """A steady measure (a file's size, one run per side): on_worse = "reject" rejects
    (exit 1); "report" only reports it (accepted, exit 0); no measure changed: accepted."""
    size = '[[measures]]\nname = "size"\nkind = "size"\nfile = "work.py"\non_worse = "reject"\n'
    repo = _repo(tmp_path, size)
    _commit(repo, {"work.py": WORK + "\n# " + "padding " * 40 + "\n"}, "bigger")
    code, result = check_json(repo)
    assert code == 1, result
    assert result["verdict"] == "rejected" and "measure size:" in result["reason"]
    assert result["measures"][0]["verdict"] == "worse" and result["measures"][0]["runs"] == 1

    (repo / "selfforge.toml").write_text(
        (repo / "selfforge.toml").read_text().replace('"reject"', '"report"')
    )
    git(repo, "commit", "-q", "-am", "report only")  # the directives' change: base and tip
    _commit(repo, {"work.py": WORK + "\n# " + "padding " * 80 + "\n"}, "bigger still")
    code, result = check_json(repo)
    assert code == 0, result
    assert result["verdict"] == "accepted" and result["measures"][0]["verdict"] == "worse"

    _commit(repo, {"test_more.py": TEST.replace("test_work", "test_more")}, "a test")
    summary = tmp_path / "summary.md"  # as under GitHub Actions: the step summary's table
    proc = cli("check", "--repo", str(repo), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "size: " in proc.stdout and ": unchanged" in proc.stdout
    table = summary.read_text()
    assert "| measure | base | candidate | change [interval] | runs | verdict |" in table
    assert "| size | " in table and "| 1 | unchanged |" in table

    # a data file the measure declares (`files`) is protected like its script: a change
    # to it needs review, naming it (issue 42.4)
    toml = (repo / "selfforge.toml").read_text() + 'files = ["data.txt"]\n'
    _commit(repo, {"selfforge.toml": toml, "data.txt": "1 2 3\n"}, "the measure's data")
    _commit(repo, {"data.txt": "1\n"}, "less data")
    code, result = check_json(repo)
    assert code == 3, result
    assert any("data.txt" in item for item in result["review"]), result["review"]
