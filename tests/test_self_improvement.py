"""selfforge aimed at a copy of its own repository: a change lands only after the
candidate's own code completes the demo; the next cycle runs the new code; rollback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from selfforge.journal import Journal

from conftest import cli, git, log_json

REPO = Path(__file__).resolve().parents[1]
DEMO_LINE = '    console.print("[bold]selfforge demo[/]")\n'
MARKER = "NEW-CODE-MARKER-7f3a"


def _block(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


@pytest.fixture
def self_copy(tmp_path: Path) -> Path:
    if not (REPO / ".git").exists():
        pytest.skip("needs selfforge's own git checkout")
    copy = tmp_path / "selfforge"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(copy)], check=True)
    git(copy, "config", "user.name", "Test User")
    git(copy, "config", "user.email", "user@example.com")
    (copy / "selfforge.toml").write_text(
        '[goals]\nitems = ["Keep selfforge working"]\n\n'
        '[checks]\ntest = "python -c \\"import selfforge\\""\ntimeout_s = 120\n\n'
        "[limits]\ncycles = 3\nmax_repairs = 0\n\n"
        '[roles]\nenabled = ["plan", "propose", "review"]\n'
    )
    git(copy, "add", "selfforge.toml")
    git(copy, "commit", "-q", "-m", "directives for the self-run")
    return copy


def test_self_change_lands_only_after_its_smoke_run(self_copy: Path, script) -> None:
    demo_py = (self_copy / "src/selfforge/demo.py").read_text()
    propose_j2 = (self_copy / "src/selfforge/prompts/propose.j2").read_text()
    assert DEMO_LINE in demo_py, "the test's anchor line moved; update DEMO_LINE"
    first_line = propose_j2.splitlines(keepends=True)[0]
    breaks_demo = _block("src/selfforge/demo.py", DEMO_LINE, "    raise SystemExit(3)\n")
    good = _block("src/selfforge/prompts/propose.j2", first_line, f"{MARKER}\n{first_line}")
    spec = script(
        plan=["1. Improve the demo\n2. Tidy the prompts\n3. Polish the docs"],
        propose=[breaks_demo, good, ""],
    )
    start = git(self_copy, "rev-parse", "HEAD").strip()
    proc = cli("run", "--repo", str(self_copy), "--model", spec)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    attempts = log_json(self_copy)
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted", "no_edits"]
    assert "smoke run failed" in attempts[0]["reason"]
    assert "SystemExit" not in (self_copy / "src/selfforge/demo.py").read_text()
    landed = attempts[1]["commit"]
    assert git(self_copy, "rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert "restarting with the new code" in proc.stdout

    with Journal(self_copy / ".selfforge" / "journal.db") as journal:
        assert journal.get_meta("last_known_good") == landed
        third = [c for c in journal.calls(attempts[2]["id"]) if c["role"] == "propose"]
        assert attempts[2]["run_id"] != attempts[1]["run_id"]  # a new process ran cycle 3
    assert MARKER in third[0]["prompt"]  # rendered by the template that just landed

    # rollback restores the last known good tree as a new commit
    git(self_copy, "commit", "-q", "--allow-empty", "-m", "unrelated")
    (self_copy / "src/selfforge/notes.txt").write_text("x\n")
    git(self_copy, "add", "-A")
    git(self_copy, "commit", "-q", "-m", "a later change")
    rolled = cli("rollback", "--repo", str(self_copy))
    assert rolled.returncode == 0, rolled.stderr
    assert not (self_copy / "src/selfforge/notes.txt").exists()
    tree = git(self_copy, "rev-parse", "HEAD^{tree}")
    assert tree == git(self_copy, "rev-parse", f"{landed}^{{tree}}")
    status = json.loads(cli("status", "--json", "--repo", str(self_copy)).stdout)
    assert status["running"] is False
