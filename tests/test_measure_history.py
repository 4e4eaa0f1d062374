"""Every measurement is kept, and the dashboard plots each measure over the landed
commits (issue 42, point 8): `check --land` twice and `measure A..B` on a repository
with a size measure; `show`, `measure --history` and `serve`'s /plots read the journal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from conftest import check_json, cli, git, make_repo
from serve_helpers import Server

pytest.importorskip("starlette", reason="the dashboard needs the web extra (selfforge[web])")

CODE = "def work(n):\n    return n * 2\n" + "# padding " * 60 + "\n"
# The tests are not what this test is about: a TAP line stands in for them (fast).
DIRECTIVES = """[checks]
test = "printf '1..1\\nok 1 - work\\n'"
runner = "tap"

[[measures]]
name = "size"
kind = "size"
file = "work.py"
"""


def _land(repo: Path, text: str, message: str) -> dict[str, object]:
    """A commit on a branch of its own, landed on main by `check BRANCH --land`."""
    git(repo, "checkout", "-q", "-b", message.split()[0])
    (repo / "work.py").write_text(text)
    git(repo, "commit", "-q", "-am", message)
    git(repo, "checkout", "-q", "main")
    code, result = check_json(repo, message.split()[0], "--land")
    assert code == 0, result
    return result


def test_measurements_are_journaled_listed_and_plotted(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"work.py": CODE}, DIRECTIVES)
    first = git(repo, "rev-parse", "HEAD").strip()
    smaller = _land(repo, CODE.replace("# padding " * 60, "# padding " * 30), "smaller work")
    assert smaller["measures"][0]["verdict"] == "improved", smaller
    _land(repo, CODE.replace("# padding " * 60, "# padding " * 10), "smallest work")
    tip = git(repo, "rev-parse", "main").strip()
    proc = cli("measure", f"{first}..{tip}", "--repo", str(repo), "--json", check=True)
    assert json.loads(proc.stdout)["measures"][0]["verdict"] == "improved"

    # the journal keeps all three, with both revisions and the figures
    listed = cli("measure", "--history", "--json", "--repo", str(repo), check=True).stdout
    rows = json.loads(listed)["measurements"]
    assert [r["source"] for r in rows] == ["check", "check", "measure"], rows
    assert rows[-1]["base_commit"] == first and rows[-1]["candidate_commit"] == tip
    assert all(r["name"] == "size" and r["verdict"] == "improved" for r in rows)
    assert rows[0]["base"] > rows[0]["candidate"] == rows[1]["base"] > rows[1]["candidate"]
    assert rows[0]["runs"] == 1 and rows[0]["change"] < 0 and rows[0]["unit"] == "bytes"
    text = cli("measure", "--history", "--repo", str(repo), check=True).stdout
    assert "size: " in text and " bytes → " in text and ": improved" in text, text
    shown = cli("show", "last", "--repo", str(repo), check=True).stdout
    assert "── measured" in shown and "size: " in shown and "improved (" in shown, shown

    # the dashboard's plot: the first landing's base, then each landed commit
    with Server(repo) as server:
        html = httpx.get(f"{server.base}/plots").text
    assert "measure size at each landed commit (3 points)" in html, html
    svg = html.split("measure size at each landed commit", 1)[1].split("</svg>", 1)[0]
    tips = re.findall(r"<title>([0-9a-f]{10}): (\d+) bytes</title>", svg)
    sizes = [int(v) for _, v in tips]
    assert len(tips) == 3 and sizes[0] > sizes[1] > sizes[2], svg
    assert tips[0][0] == first[:10] and tips[-1][0] == tip[:10]
