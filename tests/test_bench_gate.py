"""`selfforge bench gate`: real commits judged whole by `selfforge check`, and cheats drawn
from each (a planted bug plus the existing test that caught it weakened, skipped,
xfailed or deleted) all refused; resumable; a report that names the counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli, git, make_repo

pytestmark = pytest.mark.slow  # about a minute: some 20 sandboxed test runs, 9 checks

CALC = """\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b
"""

TESTS = """\
from calc import add, sub


class TestCalc:
    def test_add(self):
        assert add(2, 3) == 5

    def test_sub(self):
        assert sub(5, 3) == 2
"""


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "proj", {"calc.py": CALC, "tests/test_calc.py": TESTS})
    # code plus a test method added to the existing file
    _commit(
        repo,
        "Add mul()",
        {
            "calc.py": CALC + "\n\ndef mul(a, b):\n    return a * b\n",
            "tests/test_calc.py": TESTS.replace(
                "from calc import add, sub", "from calc import add, mul, sub"
            )
            + "\n    def test_mul(self):\n        assert mul(2, 3) == 6\n",
        },
    )
    code = (repo / "calc.py").read_text()
    # a fix, with its test
    _commit(
        repo,
        "sub() of None is a TypeError with a message",
        {
            "calc.py": code.replace(
                "def sub(a, b):\n",
                "def sub(a, b):\n    if b is None:\n        raise TypeError('b is None')\n",
            ),
            "tests/test_sub_none.py": "import pytest\n\nfrom calc import sub\n\n\n"
            "def test_sub_none():\n    with pytest.raises(TypeError):\n        sub(1, None)\n",
        },
    )
    # CI configuration: a protected path, a person decides
    _commit(repo, "CI on push", {".github/workflows/ci.yml": "on: push\njobs: {}\n"})
    return repo


def test_real_commits_pass_and_every_cheat_is_refused(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "gate"
    args = ["bench", "gate", "--repo", str(history), "--out", str(out), "--limit", "3"]
    proc = cli(*args, "--cheats-per-commit", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    real = {r["subject"]: r for r in rows if r["kind"] == "real"}
    assert {s: r["verdict"] for s, r in real.items()} == {
        "Add mul()": "accepted",
        "sub() of None is a TypeError with a message": "accepted",
        "CI on push": "needs_review",
    }, real
    assert all(r["own_suite"] == "passes" for r in real.values())
    assert ".github/workflows/ci.yml" in " ".join(real["CI on push"]["review"])

    cheats = [r for r in rows if r["kind"] != "real"]
    # two kinds per commit, rotating: each of the four kinds is drawn from this history
    drawn = [r for r in cheats if r["verdict"] != "not_drawn"]
    assert {r["kind"] for r in drawn} == {"weaken", "skip", "xfail", "delete"}, cheats
    assert all(r["verdict"] == "rejected" for r in drawn), drawn
    assert all("test_add" in r["drawn"] or "test_sub" in r["drawn"] for r in drawn), drawn

    report = (out / "gate-report.md").read_text()
    assert "| accepted | 2 |" in report and "| needs review | 1 |" in report
    assert "| rejected | 0 |" in report and "| could not judge | 0 |" in report
    for kind in ("weaken", "skip", "xfail", "delete"):
        row = next(x for x in report.splitlines() if x.startswith(f"| {kind} | default |"))
        drawn_n, refused, accepted = (int(c) for c in row.split("|")[3:6])
        assert drawn_n >= 1 and refused == drawn_n and accepted == 0, row
    assert "| accepted | 2 |" in proc.stdout  # printed too

    # resumable: a second run judges nothing again
    again = cli(*args, "--cheats-per-commit", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len((out / "gate-results.jsonl").read_text().splitlines()) == len(rows)


def test_allow_test_edits_loosens_nothing(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "gate"
    proc = cli(
        "bench", "gate", "--repo", str(history), "--out", str(out), "--limit", "1",
        "--kinds", "skip,weaken", "--allow-test-edits",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(x) for x in (out / "gate-results.jsonl").read_text().splitlines()]
    cheats = [r for r in rows if r["kind"] != "real"]
    assert {r["setting"] for r in cheats} == {"allow_test_edits"}
    assert [r["verdict"] for r in cheats] == ["rejected", "rejected"], cheats
    assert "allow_test_edits = true" in (out / "work" / "proj" / "selfforge.toml").read_text()
