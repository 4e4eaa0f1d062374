"""A long unattended run: 50 scripted cycles on a real package, through the real CLI.

The script mixes every kind of reply a real model gives (good edits, edits that do not
apply, that break a test, that break the syntax, repairs that fix them, empty replies)
with provider errors. The scripted model raises its errors directly, with no retry layer
in between, so each scripted error costs its attempt an 'error' outcome; the loop stops
after three in a row, so the script never has three in a row.

Every propose reply is written against anchors no landed edit removes (``def`` lines),
so each cycle's outcome is known in advance and the whole journal can be checked.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from selfforge.journal.store import Journal
from selfforge.run.planner import Backlog

from conftest import cli, git, left_worktrees, make_repo

CYCLES = 50
MODULES = 10
# unittest, not pytest: a pytest start costs ~10x more, and 50 cycles run it 50 times.
TEST_COMMAND = f"{sys.executable} -m unittest discover -s tests -t . -v"

# Per cycle: a kind of attempt. Errors are never three in a row.
PATTERN = [
    "good",
    "break",
    "good",
    "syntax",
    "empty",
    "repair_syntax",
    "rate_limit",
    "good",
    "apply_fail",
    "create",
    "server",
    "rate_limit",
    "good",
    "repair_apply",
    "break",
    "repair_server",
    "empty",
    "empty",
    "good",
    "create",
]
# kind -> (outcome, repairs) the journal must show
EXPECTED = {
    "good": ("accepted", 0),
    "create": ("accepted", 0),
    "repair_syntax": ("accepted", 1),
    "repair_apply": ("accepted", 1),
    "break": ("rejected", 1),
    "syntax": ("rejected", 1),
    "apply_fail": ("rejected", 1),
    "empty": ("no_edits", 0),
    "rate_limit": ("error", 0),
    "server": ("error", 0),
    "repair_server": ("error", 0),
}


def module(i: int) -> str:
    return (
        f"def value_{i}():\n    return {i}\n\n\n"
        f"def double_{i}(x):\n    return x * 2\n\n\n"
        f'def label_{i}():\n    return "m{i}"\n'
    )


def module_test(i: int) -> str:
    return (
        f"import unittest\n\nfrom pkg.mod{i} import double_{i}, label_{i}, value_{i}\n\n\n"
        f"class TestMod{i}(unittest.TestCase):\n"
        f"    def test_value(self):\n        self.assertEqual(value_{i}(), {i})\n\n"
        f"    def test_double(self):\n        self.assertEqual(double_{i}(3), 6)\n\n"
        f"    def test_label(self):\n        self.assertEqual(label_{i}(), 'm{i}')\n"
    )


def block(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def replies(kind: str, cycle: int) -> list[object]:
    """The propose replies of one cycle (one per round; max_repairs is 1)."""
    i = cycle % MODULES
    mod = f"pkg/mod{i}.py"
    good = block(mod, f"def label_{i}():\n", f'def label_{i}():\n    """Cycle {cycle}."""\n')
    broken = block(mod, f"def double_{i}(x):\n", f"def double_{i}(x:\n")
    fixed = block(mod, f"def double_{i}(x:\n", f'def double_{i}(x):\n    """Twice x."""\n')
    missing = block(mod, f"def missing_{cycle}():\n", "pass\n")
    wrong = block(mod, f"def value_{i}():\n", f"def value_{i}():\n    return {i} + 1\n")
    created = block(f"pkg/extra_{cycle}.py", "", f"def extra_{cycle}():\n    return {cycle}\n")
    return {
        "good": [good],
        "create": [created],
        "repair_syntax": [broken, fixed],
        "repair_apply": [missing, good],
        "break": [wrong, ""],
        "syntax": [broken, ""],
        "apply_fail": [missing, missing],
        "empty": [""],
        "rate_limit": [{"error": "rate_limit"}],
        "server": [{"error": "server"}],
        "repair_server": [broken, {"error": "server"}],
    }[kind]


@dataclass
class Script:
    kinds: list[str] = field(default_factory=list)
    propose: list[object] = field(default_factory=list)

    @classmethod
    def build(cls, cycles: int) -> Script:
        script = cls()
        for cycle in range(1, cycles + 1):
            kind = PATTERN[(cycle - 1) % len(PATTERN)]
            script.kinds.append(kind)
            script.propose.extend(replies(kind, cycle))
        return script

    def roles(self) -> dict[str, list[object]]:
        # Three tasks per plan call; far more than 50 cycles can use up.
        plans = [
            "\n".join(f"{n}. Improve part {3 * k + n} of the package" for n in (1, 2, 3))
            for k in range(CYCLES)
        ]
        return {"plan": plans, "propose": self.propose}


def make_package(root: Path) -> Path:
    files = {"pkg/__init__.py": "", "tests/__init__.py": ""}
    for i in range(MODULES):
        files[f"pkg/mod{i}.py"] = module(i)
        files[f"tests/test_mod{i}.py"] = module_test(i)
    directives = f"""
[goals]
items = ["Document the package", "Keep every test passing"]

[checks]
test = {json.dumps(TEST_COMMAND)}
timeout_s = 60

[limits]
cycles = {CYCLES}
max_repairs = 1

[roles]
enabled = ["plan", "propose", "review"]
"""
    return make_repo(root, files, directives)


@pytest.mark.slow
def test_fifty_unattended_cycles_leave_a_consistent_journal_and_a_clean_repo(
    tmp_path: Path,
) -> None:
    repo = make_package(tmp_path / "pkg-repo")
    base = git(repo, "rev-parse", "HEAD").strip()
    script = Script.build(CYCLES)
    spec = tmp_path / "script.json"
    spec.write_text(json.dumps(script.roles()))

    started = time.monotonic()
    proc = cli("run", "--repo", str(repo), "--model", f"script:{spec}")
    wall = time.monotonic() - started
    print(f"\n{CYCLES} cycles in {wall:.1f}s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "Traceback" not in proc.stderr

    with Journal(repo / ".selfforge" / "journal.db") as journal:
        run = journal.run_info(1)
        last_run = journal.last_run_id()
        attempts = journal.attempts()
        calls = {a.id: journal.calls(a.id) for a in attempts}
        tasks = Backlog(journal).all_tasks()
    assert run is not None and last_run == 1
    assert run["status"] == "finished" and run["ended_at"] is not None
    assert run["stop_reason"] == f"reached the cycle limit ({CYCLES})"

    # Every cycle made one attempt, and each ended as its script says.
    assert [a.cycle for a in attempts] == list(range(1, CYCLES + 1))
    assert all(a.outcome is not None and a.ended_at is not None for a in attempts)
    got = [(a.outcome, a.repairs) for a in attempts]
    assert got == [EXPECTED[kind] for kind in script.kinds]
    for a, kind in zip(attempts, script.kinds, strict=True):
        assert_reason(kind, a.reason or "", calls[a.id])

    # Landed commits are main's history since the run began, in attempt order.
    landed = [a for a in attempts if a.landed]
    assert landed and all(a.outcome == "accepted" and a.branch is None for a in landed)
    assert len(landed) == sum(1 for a in attempts if a.outcome == "accepted")
    history = git(repo, "rev-list", "--reverse", f"{base}..main").split()
    assert history == [a.commit for a in landed]
    for a in landed:
        message = git(repo, "log", "-1", "--format=%B", a.commit or "")
        assert f"Selfforge-Attempt: {a.id}\nSelfforge-Run: {a.run_id}\n" in message

    # Nothing left behind: worktrees, temporary branches, changes, the lock.
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert left_worktrees(repo) == (["attempt", "baseline"], 2)  # kept for the next run
    assert git(repo, "for-each-ref", "refs/heads/selfforge/") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    status = json.loads(cli("status", "--json", "--repo", str(repo), check=True).stdout)
    assert status["running"] is False and status["attempts"] == CYCLES

    # The package still passes its own tests, with every accepted edit in it.
    assert "OK" in cli_tests(repo)
    assert len(list((repo / "pkg").glob("extra_*.py"))) == script.kinds.count("create")

    # Tasks: the accepted ones are done; skipped ones say why; none is stuck open
    # with more failures than the strategy allows.
    assert sum(t.status == "done" for t in tasks) == len(landed)
    assert all(t.note for t in tasks if t.status == "skipped")
    assert all(t.attempts < 3 for t in tasks if t.status == "open")

    # Training data: one SFT example per accepted attempt; DPO pairs join a rejected
    # attempt to an accepted one at the same task.
    sft = export(repo, "sft")
    assert [r["metadata"]["attempt_id"] for r in sft] == [
        a.id for a in attempts if a.outcome == "accepted"
    ]
    by_id = {a.id: a for a in attempts}
    ids = {t.text: t.id for t in tasks}
    pairs = export(repo, "dpo")
    assert pairs
    for pair in pairs:
        meta = pair["metadata"]
        chosen, rejected = by_id[meta["chosen_attempt_id"]], by_id[meta["rejected_attempt_id"]]
        assert (chosen.outcome, rejected.outcome) == ("accepted", "rejected")
        assert chosen.task == rejected.task and meta["task_id"] == ids[chosen.task]

    report = repo / ".selfforge" / "reports" / "run-0001.md"
    text = report.read_text()
    assert "status: finished" in text
    assert text.count("\n### ") == CYCLES


def assert_reason(kind: str, reason: str, calls: list[dict[str, object]]) -> None:
    """The journal says why each attempt ended, and keeps the failing call."""
    proposes = [c for c in calls if c["role"] == "propose"]
    expected_rounds = len(replies(kind, 1))
    assert len(proposes) == expected_rounds, (kind, proposes)
    if kind in ("rate_limit", "server", "repair_server"):
        error = "rate_limit" if kind == "rate_limit" else "server"
        assert reason == f"scripted {error} error"
        assert proposes[-1]["response"] is None
        assert proposes[-1]["error"] == f"scripted {error} error"
        return
    assert all(c["error"] is None for c in proposes)
    if kind == "break":
        assert "test_value" in reason, reason
    elif kind == "syntax":
        assert reason.startswith("syntax error"), reason
    elif kind == "apply_fail":
        assert reason.startswith("edits did not apply"), reason
    elif kind == "empty":
        assert reason == "the model proposed no edits"
    else:
        assert reason.startswith("all gates passed; landed"), reason


def export(repo: Path, fmt: str) -> list[dict[str, object]]:
    proc = cli("export", "--format", fmt, "--repo", str(repo), check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def cli_tests(repo: Path) -> str:
    import subprocess

    proc = subprocess.run(
        TEST_COMMAND.split(), cwd=repo, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr
