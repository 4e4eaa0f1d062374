"""The exploring proposer (`run --proposer explore`): the scripted model answers each step
with one action; commands run for real in the attempt's worktree inside the sandbox,
edits through the edit engine, and the judge decides on what the worktree holds."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    TEST_CALC,
    cli,
    directives,
    git,
    log_json,
    make_repo,
)

OPS = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
APP = """from mathlib.ops import add


def total(xs):
    out = 0
    for x in xs:
        out = add(out, x)
    return out
"""
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


def explore_run(
    repo: Path, spec: str, task: str = "Fix add() so test_add passes", env: dict | None = None
) -> None:
    args = ("run", "--repo", str(repo), "--model", spec, "--proposer", "explore")
    cli(*args, "--task", task, check=True, env=env)


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


def test_a_command_past_its_timeout_is_killed_and_megabytes_of_output_are_cut(
    tmp_path: Path, script
) -> None:
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC}
    d = explore_directives(explore_command_s=2, explore_steps=4)
    repo = make_repo(tmp_path / "repo", files, d)
    big = "head -c 600000 /dev/zero | tr '\\0' a; echo; echo TAIL-MARK"
    slow = bash("sleep 60; echo SLEPT-ENOUGH")
    spec = script(propose=[slow, bash(big), bash("yes | head -c 3000000")])
    explore_run(repo, spec)

    [attempt] = log_json(repo)
    assert attempt["outcome"] == "no_edits"
    assert "stopped at the step limit (4, [model] explore_steps)" in attempt["reason"]
    asked = prompts(repo)
    assert len(asked) == 4  # three commands, then an empty reply (a reminder), then the limit
    assert "The command was killed after 2 s (the command timeout" in asked[1]
    assert "explore_command_s); run something quicker.\nOutput:\n(no output)" in asked[1]
    # 600 KB: the head and the tail, with what was cut in between.
    assert "bytes of output cut here; 600,010 in all" in asked[2] and "TAIL-MARK" in asked[2]
    assert "a" * 4096 in asked[2] and "a" * 8200 not in asked[2]
    # 3 MB: the sandbox's output cap stops the command, and the model is told.
    assert "[killed: hit the output limit (1024 KB, [sandbox] output_kb)]" in asked[3]
    assert "The command was killed after" in asked[3] and "code -9" not in asked[3]
    assert len(asked[3]) < 40_000
    kinds = [s["kind"] for s in steps(repo)]
    assert kinds == ["task", "bash", "bash", "bash", "invalid", "limit"]


def test_the_sandbox_has_no_network_and_nothing_of_the_host(tmp_path: Path, script) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())
    (repo / ".selfforge").mkdir()
    (repo / ".selfforge" / "planted.txt").write_text("state")
    home = tmp_path / "home"  # the run's HOME, with something of the user's in it
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("KEY")
    connect = "import socket; socket.create_connection(('1.1.1.1', 53), timeout=5)"
    commands = [
        f'{sys.executable} -c "{connect}"',
        f"ls -A {home} | wc -l; cat {home}/.ssh/id_ed25519",
        f"cat {repo}/calc.py",
        f"ls -A {repo}/.selfforge | wc -l",
        "cat calc.py | head -2",
    ]
    spec = script(propose=[*map(bash, commands), "DONE"])
    explore_run(repo, spec, env={"HOME": str(home)})
    ran = {s["step"]: s for s in steps(repo)}
    assert ran[1]["exit_code"] != 0 and "unreachable" in ran[1]["output"].lower()
    assert "\n0\ncat: " in ran[2]["output"] and "KEY" not in ran[2]["output"]  # an empty home
    assert ran[3]["exit_code"] != 0 and "No such file" in ran[3]["output"]  # the checkout
    assert ran[4]["output"].splitlines()[-1] == "0"  # nor selfforge's state
    assert "def add(a, b):" in ran[5]["output"]  # the attempt's own tree is there
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "no_edits"
    assert attempt["reason"] == "the model proposed no edits: the model said it was done"


def test_the_step_limit_makes_what_was_changed_the_candidate(calc_repo: Path, script) -> None:
    toml = (calc_repo / "selfforge.toml").read_text() + "\n[model]\nexplore_steps = 2\n"
    (calc_repo / "selfforge.toml").write_text(toml)
    git(calc_repo, "commit", "-q", "-am", "two steps")
    spec = script(propose=[FIX_ADD, bash("ls"), bash("ls"), "DONE"])
    explore_run(calc_repo, spec)
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "accepted", attempt
    assert [s["kind"] for s in steps(calc_repo)] == ["task", "edit", "bash", "limit"]
    assert "return a + b" in (calc_repo / "calc.py").read_text()


def test_cannot_is_the_reason_of_an_attempt_with_no_edits(calc_repo: Path, script) -> None:
    spec = script(
        propose=[
            bash("cat test_calc.py"),
            "The test is wrong.\nCANNOT: test_add expects 5 from add(2, 3) but the goal "
            "says subtract",
        ]
    )
    explore_run(calc_repo, spec)
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "no_edits"
    assert attempt["reason"] == (
        "the model said it cannot be done: test_add expects 5 from "
        "add(2, 3) but the goal says subtract"
    )


def test_git_in_the_sandbox_knows_nothing_after_the_base(calc_repo: Path, script) -> None:
    base = git(calc_repo, "rev-parse", "HEAD").strip()
    git(calc_repo, "switch", "-q", "-c", "future")  # another branch, a later commit
    (calc_repo / "calc.py").write_text(CALC.replace("a - b", "a + b", 1))
    git(calc_repo, "commit", "-q", "-am", "the gold fix")
    gold = git(calc_repo, "rev-parse", "HEAD").strip()
    git(calc_repo, "switch", "-q", "main")
    (calc_repo / "calc.py").write_text(CALC + "# stashed\n")  # a stash
    git(calc_repo, "stash", "-q")
    stash = git(calc_repo, "rev-parse", "stash@{0}").strip()
    git(calc_repo, "commit", "-q", "--allow-empty", "-m", "undone")  # only in the reflog
    undone = git(calc_repo, "rev-parse", "HEAD").strip()
    git(calc_repo, "reset", "-q", "--hard", base)
    later = {gold, stash, undone}
    looks = [
        "git log --all --format=%H",
        f"git show {gold}; git show {undone} --stat",
        "git reflog; git stash list; git for-each-ref",
        "git cat-file --batch-all-objects --batch-check",
    ]
    # The control: outside, each look finds the later commits.
    outside = git(calc_repo, "log", "--all", "--reflog", "--format=%H")
    assert later <= set(outside.split()) and git(calc_repo, "stash", "list")
    spec = script(propose=[*map(bash, looks), FIX_ADD, "DONE"])
    explore_run(calc_repo, spec)

    ran = {s["step"]: s for s in steps(calc_repo)}
    history = git(calc_repo, "log", "--format=%H", base).split()
    assert ran[1]["exit_code"] == 0
    assert ran[1]["output"].split("Output:\n")[1].split() == history
    assert ran[2]["exit_code"] != 0 and "bad object" in ran[2]["output"]
    assert ran[3]["exit_code"] == 0 and ran[3]["output"].endswith("Output:\n(no output)")
    assert ran[4]["exit_code"] == 0 and "commit" in ran[4]["output"]
    assert f"fatal: bad object {gold}" in ran[2]["output"]  # named by the command only
    for step in (ran[1], ran[3], ran[4]):
        assert not any(sha in step["output"] for sha in later), step
    # The worktree's git works for the change itself, and it lands.
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "accepted", attempt


def test_a_rejection_is_the_first_thing_the_next_round_sees(tmp_path: Path, script) -> None:
    d = directives(max_repairs=1)
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, d)
    fix_sub = "calc.py\n<<<<<<< SEARCH\ndef sub(a, b):\n    return a + b\n=======\n"
    fix_sub += "def sub(a, b):\n    return a - b\n>>>>>>> REPLACE\n"
    spec = script(propose=[FIX_ADD_BREAK_SUB, "DONE", fix_sub, "DONE"])
    explore_run(repo, spec)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted" and attempt["repairs"] == 1, attempt
    kinds = [(s["round"], s["kind"]) for s in steps(repo)]
    assert kinds == [
        (0, "task"),
        (0, "edit"),
        (0, "done"),
        (1, "feedback"),
        (1, "edit"),
        (1, "done"),
    ]
    third = prompts(repo)[2]
    assert "selfforge's checks rejected the change you made" in third and "test_sub" in third
    assert "return a + b\n    return a - b" not in (repo / "calc.py").read_text()
    assert "def sub(a, b):\n    return a - b" in (repo / "calc.py").read_text()


def test_explore_refuses_to_run_commands_outside_the_sandbox(calc_repo: Path, script) -> None:
    args = ("run", "--repo", str(calc_repo), "--model", script(), "--proposer", "explore")
    proc = cli(*args, "--no-sandbox")
    assert proc.returncode == 2 and "only in the sandbox" in proc.stderr
    proc = cli(*args[:-2], "--proposer", "agent")
    assert proc.returncode == 2 and "use oneshot or explore" in proc.stderr


def test_a_reply_cut_at_the_output_limit_is_a_step_not_an_error(calc_repo: Path, script) -> None:
    cut = {"content": "Let me think about this at great length", "truncated": True}
    explore_run(calc_repo, script(propose=[cut, FIX_ADD, "DONE"]))
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "accepted", attempt
    assert [s["kind"] for s in steps(calc_repo)] == ["task", "invalid", "edit", "done"]
    assert "Your reply was cut at the output limit" in prompts(calc_repo)[1]
