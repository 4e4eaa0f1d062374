"""The exploring proposer (`run --proposer explore`): the scripted model answers each step
with one action; commands run for real in the attempt's worktree inside the sandbox,
edits through the edit engine, and the judge decides on what the worktree holds."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, log_json, make_repo

OPS = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
APP = "from mathlib.ops import add\n\n\ndef total(xs):\n    out = 0\n    for x in xs:\n        out = add(out, x)\n    return out\n"
TEST_APP = "from app import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n"
FIX_OPS = """mathlib/ops.py
<<<<<<< SEARCH
def add(a, b):
    return a - b
=======
def add(a, b):
    return a + b
>>>>>>> REPLACE
"""


def bash(command: str) -> str:
    return f"Let me look.\n```bash\n{command}\n```\n"


def explore_run(repo: Path, spec: str, task: str = "Fix add() so test_add passes") -> None:
    args = ("run", "--repo", str(repo), "--model", spec, "--proposer", "explore")
    cli(*args, "--task", task, check=True)


def steps(repo: Path) -> list[dict[str, object]]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM trajectory ORDER BY id")]


def prompts(repo: Path) -> list[str]:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = db.execute("SELECT prompt FROM model_calls WHERE role = 'propose' ORDER BY id")
        return [r[0] for r in rows]


def explore_directives(**model: object) -> str:
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in model.items())
    return directives(extra=f"\n[model]\n{lines}\n")


def test_a_command_finds_the_module_the_task_does_not_name(tmp_path: Path, script) -> None:
    files = {"mathlib/__init__.py": "", "mathlib/ops.py": OPS, "app.py": APP}
    repo = make_repo(tmp_path / "repo", {**files, "test_app.py": TEST_APP}, directives())
    spec = script(propose=[bash('grep -rn "def add" .'), FIX_OPS, "DONE"])
    explore_run(repo, spec, task="Make test_total in test_app.py pass")

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt
    assert "return a + b" in (repo / "mathlib" / "ops.py").read_text()
    kinds = [(s["kind"], s["step"]) for s in steps(repo)]
    assert kinds == [("task", 0), ("bash", 1), ("edit", 2), ("done", 3)]
    # The second prompt shows what the command found, where the task named nothing.
    assert "./mathlib/ops.py:1:def add(a, b):" in prompts(repo)[1]
    assert "The edits applied; changed: mathlib/ops.py." in prompts(repo)[2]

    brief = cli("show", "last", "--repo", str(repo), "--brief", check=True).stdout
    assert "trajectory (3 step(s))" in brief and 'bash     grep -rn "def add" .' in brief
    full = cli("show", "last", "--repo", str(repo), "--brief", "--steps", check=True).stdout
    assert "./mathlib/ops.py:1:def add(a, b):" in full and "The command exited with code 0" in full

    out = cli("export", "--format", "traces", "--repo", str(repo), check=True).stdout
    [trace] = [json.loads(line) for line in out.splitlines()]
    roles = [m["role"] for m in trace["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert "exactly ONE action" in trace["messages"][0]["content"]
    assert trace["messages"][-1]["content"] == "DONE"
    assert trace["metadata"]["outcome"] == "accepted" and trace["metadata"]["steps"] == 3
    # Its last reply says DONE: no edit reply to learn from as SFT.
    sft = cli("export", "--format", "sft", "--repo", str(repo), check=True).stdout
    assert sft == ""
