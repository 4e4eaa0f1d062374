"""What `selfforge measure A..B` costs beyond its runs (issue 42's done-when: the runs
its statistics need plus 0.3 s; the figures: bench/measure_overhead.py). scipy's import
(0.3–2 s of a small comparison) is gone: the t quantile is computed in stats.py, checked
here against scipy's; and `measure` starts a resident selfforge for the next call, as the
other quick commands do (tests/test_resident_autostart.py). No timed asserts: speed is
the bench's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import git, make_repo

from selfforge.measure import stats

PY = sys.executable
JITTER = f"{PY} -c 'import random; print(100 * random.uniform(0.7, 1.3))'"


def test_measure_compares_two_revisions_without_importing_scipy(tmp_path: Path) -> None:
    """A jittery measure, five pairs: the interval is drawn (the t quantile is needed),
    and the command's own process never imports scipy (it did, in a thread, and again at
    the first look)."""
    toml = f'[[measures]]\nname = "noisy"\ncommand = "{JITTER}"\nmax_runs = 5\n'
    repo = make_repo(tmp_path / "r", {"a.py": "x = 1\n"}, toml)
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("x = 2\n")
    git(repo, "commit", "-qam", "tip")
    env = {**os.environ, "SELFFORGE_RESIDENT": "0"}
    args = ["measure", f"{base}..HEAD", "--repo", str(repo), "--json", "--no-sandbox"]
    proc = subprocess.run(
        [PY, "-X", "importtime", "-m", "selfforge", *args],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [noisy] = json.loads(proc.stdout)["measures"]
    assert noisy["runs"] == 5 and noisy["low"] is not None and noisy["high"] is not None
    assert noisy["low"] < noisy["change"] < noisy["high"]
    assert noisy["verdict"] in stats.VERDICTS
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()]
    assert "selfforge.measure.stats" in imported  # the statistics ran here
    assert not [m for m in imported if m.startswith("scipy")]


def test_the_t_quantile_agrees_with_scipy() -> None:
    special = pytest.importorskip("scipy.special")
    for df in [*range(1, 31), 60, 99, 250, 1000]:
        for level in (0.5, 0.9, 0.95, 0.99, 0.999, stats.confidence(30), stats.confidence(100)):
            want = float(special.stdtrit(df, 1 - (1 - level) / 2))
            assert stats.t_quantile(df, level) == pytest.approx(want, rel=1e-9), (df, level)
