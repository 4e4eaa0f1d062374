"""selfforge aimed at a copy of its own repository: a change lands only after the
candidate's own code completes the demo and refuses known-bad changes; later cycles are
still judged by the installed code; rollback checks what it restores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfforge.journal.store import Journal

from conftest import cli, clone_self, git, log_json

REPO = Path(__file__).resolve().parents[1]
DEMO_LINE = '    console.print("[bold]selfforge demo[/]")\n'
MARKER = "NEW-CODE-MARKER-7f3a"


def _block(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


@pytest.fixture
def self_copy(tmp_path: Path) -> Path:
    if not (REPO / ".git").exists():
        pytest.skip("needs selfforge's own git checkout")
    copy, test = clone_self(tmp_path)
    (copy / "selfforge.toml").write_text(
        '[goals]\nitems = ["Keep selfforge working"]\n\n'
        f"[checks]\ntest = {json.dumps(test)}\ntimeout_s = 120\n\n"
        "[limits]\ncycles = 3\nmax_repairs = 0\n\n"
        '[roles]\nenabled = ["plan", "propose", "review"]\n'
    )
    git(copy, "add", "selfforge.toml", "tests/test_self_import.py")
    git(copy, "commit", "-q", "-m", "directives for the self-run")
    return copy


@pytest.mark.slow  # the candidate's selfforge runs the demo and six known-bad scenarios
def test_self_change_lands_only_after_its_smoke_run(self_copy: Path, script) -> None:
    demo_py = (self_copy / "src/selfforge/cli/demo.py").read_text()
    propose_j2 = (self_copy / "src/selfforge/prompts/propose.j2").read_text()
    assert DEMO_LINE in demo_py, "the test's anchor line moved; update DEMO_LINE"
    first_line = propose_j2.splitlines(keepends=True)[0]
    breaks_demo = _block("src/selfforge/cli/demo.py", DEMO_LINE, "    raise SystemExit(3)\n")
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
    assert "SystemExit" not in (self_copy / "src/selfforge/cli/demo.py").read_text()
    landed = attempts[1]["commit"]
    assert git(self_copy, "rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert "known-bad changes were refused" in json.dumps(_checks(self_copy, attempts[1]["id"]))

    with Journal(self_copy / ".selfforge" / "journal.db") as journal:
        assert json.loads(journal.get_meta("last_known_good") or "{}")["commit"] == landed
        third = [c for c in journal.calls(attempts[2]["id"]) if c["role"] == "propose"]
    assert attempts[2]["run_id"] == attempts[1]["run_id"]  # no restart into the new code
    assert not third[0]["prompt"].startswith(MARKER)  # the installed template, not the new one

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


def _checks(repo: Path, attempt_id: int) -> list[dict]:
    with Journal(repo / ".selfforge" / "journal.db") as journal:
        return journal.checks(attempt_id)


def test_rollback_refuses_a_planted_last_known_good(self_copy: Path) -> None:
    """A last-known-good record whose tree is not the one selfforge recorded is refused."""
    planted = git(self_copy, "rev-parse", "HEAD~1").strip()
    with Journal(self_copy / ".selfforge" / "journal.db") as journal:
        head_tree = git(self_copy, "rev-parse", "HEAD^{tree}").strip()
        journal.set_meta("last_known_good", json.dumps({"commit": planted, "tree": head_tree}))
    head = git(self_copy, "rev-parse", "HEAD")
    proc = cli("rollback", "--repo", str(self_copy))
    assert proc.returncode == 2 and "does not hold the tree" in proc.stderr
    assert git(self_copy, "rev-parse", "HEAD") == head
