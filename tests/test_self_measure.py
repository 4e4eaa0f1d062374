"""selfforge improves itself by a measure (issue 42, point 9): a copy of selfforge's own
repository, judged by the measure its own selfforge.toml declares (``launch-import``:
the entry point's import time, bench/launch_import.py), under its real protected list.
A slow import is planted in the copy's base commit (version n); a scripted self-run with
the goal "Make selfforge start faster" measured by it refuses a rename that claims a
speed-up (no gain: the measure says so, not a reviewer), and lands the candidate that
removes the planted import through every gate of a self-change, the smoke run included,
with its figures in the verdict: version n + 1, measured."""

from __future__ import annotations

import json
import sqlite3
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import cli, clone_self, git, log_json

REPO = Path(__file__).resolve().parents[1]
TASK = "Make selfforge start faster"
INIT = "src/selfforge/__init__.py"
VERSION = '__version__ = "0.1.0"\n'
# version n: the version read from the installed distribution's metadata at import time,
# a real and common start-up cost (importlib.metadata and a scan of sys.path)
SLOW = 'from importlib.metadata import version\n\n__version__ = version("selfforge")\n'


def _block(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


RENAME = "Renaming the import makes selfforge start faster.\n\n" + _block(
    INIT,
    SLOW,
    SLOW.replace("import version", "import version as _version").replace(
        "= version(", "= _version("
    ),
)
FAST = "Reading the distribution's metadata at import time is slow; a constant is not.\n\n" + (
    _block(INIT, SLOW, VERSION)
)


def _toml_value(value: object) -> str:
    """A TOML value for a measure's field (strings, numbers, tables of strings)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _own_measures() -> tuple[str, str]:
    """selfforge.toml's own [[measures]] as TOML (its `.venv/bin/python` made this
    interpreter: the copy has no venv of its own), and the first measure's name."""
    data = tomllib.loads((REPO / "selfforge.toml").read_text())
    measures = data.get("measures") or []
    assert measures, "selfforge.toml declares no [[measures]] (issue 42.9)"
    text = ""
    for m in measures:
        m = {**m, "command": m["command"].replace(".venv/bin/python", sys.executable)}
        text += "\n[[measures]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in m.items())
    return text, measures[0]["name"]


@pytest.mark.slow  # a clone of selfforge, two measured candidates, one smoke run
def test_selfforge_lands_a_measured_speed_up_of_itself_and_refuses_a_rename(
    tmp_path: Path, script
) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("needs selfforge's own git checkout")
    real = tomllib.loads((REPO / "selfforge.toml").read_text())
    measures, name = _own_measures()
    copy, test = clone_self(tmp_path)
    (copy / "selfforge.toml").write_text(
        '[goals]\nitems = ["Keep selfforge working"]\n\n'
        f"[checks]\ntest = {json.dumps(test)}\ntimeout_s = 120\nreruns = 0\n\n"
        "[limits]\ncycles = 2\nmax_repairs = 0\n\n"
        '[roles]\nenabled = ["propose", "review"]\n\n'
        f"[safety]\nprotected = {json.dumps(real['safety']['protected'])}\n" + measures
    )
    init = (copy / INIT).read_text()
    assert VERSION in init, f"the anchor in {INIT} moved; update the test"
    (copy / INIT).write_text(init.replace(VERSION, SLOW))  # version n: a slow start
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "version n: the version read from metadata at import")
    start = git(copy, "rev-parse", "HEAD").strip()

    spec = script(propose=[RENAME, FAST])
    proc = cli("run", "--repo", str(copy), "--model", spec, "--task", TASK, "--measure", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    rename, fast = log_json(copy)
    assert rename["outcome"] == "rejected", rename
    reason = str(rename["reason"])
    assert reason.startswith(f"goal measure {name}: "), reason  # its measure, no reviewer
    assert reason.split(";")[0].endswith((": unchanged", ": inconclusive")), reason
    assert fast["outcome"] == "accepted" and fast["landed"], fast
    assert f"measure {name}: " in str(fast["reason"]) and " ms → " in str(fast["reason"])
    assert ": improved" in str(fast["reason"]), fast

    with sqlite3.connect(copy / ".selfforge" / "journal.db") as db:
        rows = db.execute(
            "SELECT attempt_id, name, passed, output, summary FROM checks "
            "WHERE name LIKE 'measure%' OR name = 'smoke' ORDER BY id"
        ).fetchall()
    measured = [(a, p, json.loads(s)) for a, n, p, _, s in rows if n == f"measure {name}"]
    assert [(a, p) for a, p, _ in measured] == [(rename["id"], 0), (fast["id"], 1)], rows
    gain = measured[1][2]
    assert gain["verdict"] == "improved" and gain["candidate"] < gain["base"], gain
    smoke = [(p, o) for _, n, p, o, _ in rows if n == "smoke"]
    assert smoke == [(1, smoke[0][1])] and "smoke run passed" in smoke[0][1], rows

    # version n + 1: one commit, the planted import gone
    assert git(copy, "rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert (copy / INIT).read_text() == init
