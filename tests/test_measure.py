"""Measures (issue 42, points 1 and 2): `[[measures]]` in the directives, and `selfforge
measure REV | A..B` through the CLI on real repositories, its commands run in the check
sandbox on worktrees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import cli, git, make_repo

PY = sys.executable

# A function whose work a commit cuts to a third, and a script that times it (the best of
# five calls, in ms): a real measured speed-up of about 3x.
WORK = """def work(n):
    total = 0
    for i in range(n * 3):
        total += i * i
    return total
"""
BENCH = """import time
from work import work

best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    work(40000)
    best = min(best, time.perf_counter() - start)
print(f"work took {best * 1000:.3f} ms")
"""


def _toml(measures: str) -> str:
    return f'[checks]\ntest = "{PY} -m pytest -q"\n\n{measures}'


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_measures_are_read_and_bad_ones_refused_with_the_line(tmp_path: Path) -> None:
    """Today `[[measures]]` is an unknown key; now a wrong value names the file, the
    line, the measure's key and what is allowed, in one line (exit 2)."""
    bad = _toml(
        '[[measures]]\nname = "speed"\ncommand = "python3 bench.py"\n\n'
        '[[measures]]\nname = "size"\ncommand = "true"\nbetter = "smaller"\n'
    )
    repo = make_repo(tmp_path / "r", {"a.py": "x = 1\n"}, bad)
    proc = cli("measure", "--repo", str(repo))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    assert "selfforge.toml:11: bad value for 'measures[1].better'" in message
    assert "'lower' or 'higher'" in message and "Traceback" not in proc.stderr

    (repo / "selfforge.toml").write_text(_toml('[[measures]]\nname = "speed"\nunit = "ms"\n'))
    proc = cli("measure", "--repo", str(repo))
    assert proc.returncode == 2
    assert "measure 'speed' has no command" in " ".join(proc.stderr.split())

    (repo / "selfforge.toml").write_text(_toml('[[measures]]\nname = "x"\ncolour = 1\n'))
    proc = cli("measure", "--repo", str(repo))
    assert proc.returncode == 2
    assert "unknown key 'measures[0].colour' in [[measures]]" in proc.stderr


def test_measure_at_one_revision_prints_each_value(tmp_path: Path) -> None:
    """A printed number (the last one), a key of printed JSON, and a size: each measure's
    value at the revision, read in a worktree of it (not the checkout, which is dirty)."""
    measures = (
        f'[[measures]]\nname = "speed"\ncommand = "{PY} bench.py"\nunit = "ms"\n\n'
        '[[measures]]\nname = "answer"\ncommand = "echo \'{\\"a\\": {\\"b\\": 42.5}}\'"\n'
        'key = "a.b"\n\n'
        '[[measures]]\nname = "code"\nkind = "size"\nfile = "*.py"\n\n'
        # a built file: its command builds it in the revision's worktree, then its size
        '[[measures]]\nname = "built"\nkind = "size"\nfile = "dist/*.bin"\n'
        'command = "mkdir -p dist && cat work.py work.py > dist/app.bin"\n'
    )
    repo = make_repo(tmp_path / "r", {"work.py": WORK, "bench.py": BENCH}, _toml(measures))
    (repo / "work.py").write_text(WORK + "# not committed\n" * 50)  # not what is measured
    proc = cli("measure", "--repo", str(repo), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["revision"] == git(repo, "rev-parse", "HEAD").strip()
    values = {m["name"]: m for m in report["measures"]}
    assert values["speed"]["value"] > 0 and values["speed"]["unit"] == "ms"
    assert values["answer"]["value"] == 42.5
    assert values["code"]["value"] == len(WORK) + len(BENCH) and values["code"]["unit"] == "bytes"
    assert values["built"]["value"] == 2 * len(WORK)  # the committed work.py, twice

    text = cli("measure", "HEAD", "--repo", str(repo), "--measure", "code")
    assert text.returncode == 0, text.stderr
    assert f"code: {len(WORK) + len(BENCH)} bytes" in text.stdout
    assert "speed" not in text.stdout


def test_a_measure_that_prints_no_number_names_the_measure_and_the_cause(tmp_path: Path) -> None:
    measures = '[[measures]]\nname = "speed"\ncommand = "echo no figures here; exit 0"\n'
    repo = make_repo(tmp_path / "r", {"a.py": "x = 1\n"}, _toml(measures))
    proc = cli("measure", "--repo", str(repo))
    assert proc.returncode == 1
    message = " ".join(proc.stderr.split())
    assert "measure speed on" in message and "printed no number" in message
    assert "no figures here" in message and "Traceback" not in proc.stderr
    assert cli("measure", "--repo", str(repo), "--measure", "nope").returncode == 2


def test_a_real_speedup_measures_improved_with_its_interval(tmp_path: Path) -> None:
    """B cuts work() to a third: `measure A..B --json` says improved, with an interval
    entirely below -5 %, from interleaved runs of the real script on both revisions; a
    measure whose time budget (max_seconds) is spent after one pair stops there."""
    measures = f'[[measures]]\nname = "work"\ncommand = "{PY} bench.py"\nunit = "ms"\n'
    # and a noisy measure whose time budget (max_seconds) ends after its first pair
    measures += (
        '\n[[measures]]\nname = "budget"\nmax_seconds = 0.5\n'
        'command = "sleep 0.3; shuf -i 70-130 -n 1"\n'
    )
    repo = make_repo(tmp_path / "r", {"work.py": WORK, "bench.py": BENCH}, _toml(measures))
    base = git(repo, "rev-parse", "HEAD").strip()
    tip = _commit(repo, {"work.py": WORK.replace("n * 3", "n")}, "work: a third of it")
    proc = cli("measure", f"{base}..{tip}", "--repo", str(repo), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["base"], report["candidate"]) == (base, tip)
    [work, budget] = report["measures"]
    assert (budget["runs"], budget["verdict"]) == (1, "inconclusive"), budget
    assert work["verdict"] == "improved", work
    assert work["candidate"] < work["base"]
    assert work["low"] <= work["change"] <= work["high"] < -0.05
    assert work["runs"] >= 5 and work["better"] == "lower"

    text = cli("measure", f"{base}..{tip}", "--repo", str(repo), "--measure", "work")
    assert "work: " in text.stdout and "improved" in text.stdout and "runs" in text.stdout


# A no-op on a measure with ±30 % jitter, 20 comparisons: tests/test_measured_goals.py
# (test_a_no_op_change_on_a_noisy_measure_lands_0_times_in_20).
