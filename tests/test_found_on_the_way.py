"""The smaller things issue 41 found on the way, each through the CLI: a git patch that
does not apply at -p1 is refused (never applied at -p0 as ``b/`` files); the agent
recipes of docs/guides/ci-gate.md run as written; the demo's closing hint works after its
own ``cd``; ``log`` piped is plain columns; ``init`` says nothing of Python for a Go
project (its tox parsing: tests/test_init_doctor.py); doctor and check agree on
uncommitted directives, and an older commit is judged with the working tree's; a ``cmd:``
agent's program is checked before the run. (HOME anywhere: tests/test_sandbox_root.py.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, directives, git, make_repo

MORE_TEST = "from calc import mul\n\n\ndef test_mul_again():\n    assert mul(2, 3) == 6\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def _selfforge(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "selfforge", *args],
        input=stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


# -- a git patch applies at -p1 or not at all ------------------------------------------


def _format_patch_of_new_file(repo: Path, text: str) -> str:
    git(repo, "checkout", "-qb", "feature")
    (repo / "test_more.py").write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Add a test")
    patch = git(repo, "format-patch", "-1", "--stdout")
    git(repo, "checkout", "-q", "main")
    return patch


def test_a_format_patch_already_in_head_is_refused_not_applied_at_p0(repo: Path) -> None:
    patch = _format_patch_of_new_file(repo, MORE_TEST)
    git(repo, "merge", "-q", "--ff-only", "feature")  # HEAD holds the change already
    proc = _selfforge("check", "--repo", str(repo), "-", stdin=patch)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "does not apply" in proc.stderr and "already holds it" in proc.stderr
    assert "selfforge check HEAD" in proc.stderr
    assert "b/test_more.py" not in proc.stdout + proc.stderr


def test_a_format_patch_that_clashes_with_head_is_refused(repo: Path) -> None:
    patch = _format_patch_of_new_file(repo, MORE_TEST)
    (repo / "test_more.py").write_text("def test_other():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Another test_more.py")
    proc = _selfforge("check", "--repo", str(repo), "-", "--json", stdin=patch)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "does not apply" in proc.stderr and "test_more.py" in proc.stderr
    assert "already holds it" not in proc.stderr


# -- docs/guides/ci-gate.md's agent recipes, run as written ----------------------------

ROOT = Path(__file__).resolve().parents[1]
FIXED = CALC.replace("return a - b", "return a + b", 1)
BROKEN = FIXED.replace("a * b", "a + b")  # breaks mul()


def _guide_commands() -> dict[str, str]:
    guide = (ROOT / "docs" / "guides" / "ci-gate.md").read_text()
    [aider] = re.findall(r'^aider .*--test-cmd "([^"]+)"$', guide, re.M)
    [claude] = re.findall(r'"command": "([^"]+)"', guide)
    [codex] = re.findall(r"^codex exec .* && (.+)$", guide, re.M)
    return {"aider": aider, "claude": claude, "codex": codex}


def _shell(command: str, repo: Path) -> subprocess.CompletedProcess[str]:
    """``command`` as the agent's hook runs it: a shell in the repository, selfforge on
    PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["sh", "-c", command], cwd=repo, capture_output=True, text=True,
        env={**os.environ, "PATH": path, "COLUMNS": "200"},
    )  # fmt: skip


def test_the_aider_recipe_judges_the_commit_aider_made(repo: Path) -> None:
    command = _guide_commands()["aider"]
    (repo / "calc.py").write_text(FIXED)
    git(repo, "commit", "-qam", "aider: fix add()")  # aider commits each change
    good = _shell(command, repo)
    assert good.returncode == 0, good.stdout + good.stderr
    (repo / "calc.py").write_text(BROKEN)
    git(repo, "commit", "-qam", "aider: change mul()")
    bad = _shell(command, repo)
    assert bad.returncode == 1 and "test_mul" in bad.stdout, bad.stdout + bad.stderr


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_the_uncommitted_work_recipes_judge_the_agents_edits(repo: Path, agent: str) -> None:
    command = _guide_commands()[agent]
    (repo / "calc.py").write_text(BROKEN)
    bad = _shell(command, repo)
    assert bad.returncode == (2 if agent == "claude" else 1), bad.stdout + bad.stderr
    assert "test_mul" in bad.stdout + bad.stderr
    (repo / "calc.py").write_text(FIXED)
    good = _shell(command, repo)
    assert good.returncode == 0, good.stdout + good.stderr
    assert git(repo, "status", "--porcelain").strip() == "M calc.py"  # the edits stay


# -- the demo's closing hint works after its own `cd` ----------------------------------


def test_the_demos_hint_runs_selfforge_after_cd_your_repo(tmp_path: Path) -> None:
    """Started as `.venv/bin/selfforge` (not on PATH), the demo's hints repeat the command
    as it was run, and its `cd your-repo && … init` names a selfforge that the shell still
    finds after the cd (one demo run for both: each costs CI seconds)."""
    script = Path(sys.executable).parent / "selfforge"
    here = script.parent.parent.parent
    typed = os.path.relpath(script, here)  # .venv/bin/selfforge, as a user types it
    bin_dir = str(script.parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_dir)
    env = {**os.environ, "PATH": path, "COLUMNS": "200"}
    proc = subprocess.run(
        [typed, "demo", "--replay", "--dir", str(tmp_path / "demo")],
        cwd=here, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{script} log --repo" in proc.stdout  # every hint names the path it was run by
    [hint] = re.findall(r"^\s*cd your-repo && (.+) init\b", proc.stdout, re.M)
    your_repo = make_repo(tmp_path / "your-repo", {"a.py": "A = 1\n"})
    ran = subprocess.run(
        f"cd {your_repo} && {hint} --version", shell=True, cwd=tmp_path,
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert ran.returncode == 0, f"{hint!r}: {ran.stdout}{ran.stderr}"
    assert "selfforge" in ran.stdout


# -- `log` piped: plain columns, one attempt a line ------------------------------------


def test_log_piped_prints_plain_columns_one_attempt_a_line(repo: Path) -> None:
    (repo / "calc.py").write_text(FIXED)
    git(repo, "commit", "-qam", "Fix add() so that every test of the calculator passes again")
    assert _selfforge("check", "--repo", str(repo)).returncode == 0
    (repo / "calc.py").write_text(BROKEN)
    git(repo, "commit", "-qam", "Change mul() in a way that breaks its test")
    assert _selfforge("check", "--repo", str(repo)).returncode == 1
    proc = subprocess.run(  # a narrow terminal's COLUMNS: a table would wrap
        [sys.executable, "-m", "selfforge", "log", "--repo", str(repo)],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "40"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not set("│┃━─┏┗┡└┌╇╈") & set(proc.stdout), proc.stdout
    assert lines[0].split() == ["id", "run", "outcome", "task", "reason", "result", "tokens"]
    first, second = lines[1:3]
    assert first.split()[:3] == ["1", "1", "accepted"] and "every test of the" in first
    assert second.split()[:3] == ["2", "2", "rejected"] and "test_mul" in second
    assert lines[3] == "2 attempt(s); 0 tokens; $0.0000" and len(lines) == 4
    # the columns line up: each starts where its header word does
    at = lines[0].index("task")
    assert first[at:].startswith("Fix add()") and second[at:].startswith("Change mul()")


# -- init words the virtualenv for the project's language ------------------------------

GO_FILES = {
    "go.mod": "module example.com/m\n\ngo 1.19\n",
    "m.go": "package m\n\nfunc Add(a, b int) int { return a + b }\n",
    "m_test.go": 'package m\n\nimport "testing"\n\n'
    "func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal()\n\t}\n}\n",
}


@pytest.mark.skipif(shutil.which("go") is None, reason="needs go")
def test_init_says_nothing_of_python_for_a_go_project(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "g", GO_FILES)
    proc = _selfforge("init", "--repo", str(repo))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'test = "go test ./..."' in (repo / "selfforge.toml").read_text()
    assert "virtualenv" not in proc.stdout and "checks use" not in proc.stdout, proc.stdout


# -- directives: doctor and check agree; the working tree's judge an older commit ------


def test_doctor_and_check_agree_on_uncommitted_directives(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    (repo / "calc.py").write_text(FIXED)
    git(repo, "commit", "-qam", "Fix add()")
    (repo / "selfforge.toml").write_text(directives())  # as `selfforge init` leaves it
    checked = _selfforge("check", "--repo", str(repo))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "directives: selfforge.toml from the working tree" in checked.stdout
    doctor = _selfforge("doctor", "--repo", str(repo), env={"OLLAMA_HOST": "http://127.0.0.1:9"})
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr  # it was 1: "FAIL"
    assert "FAIL" not in doctor.stdout and "ready for check" in doctor.stdout
    assert "selfforge.toml is not committed" in doctor.stdout


def test_an_older_commit_is_judged_with_the_working_trees_directives(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC})
    (repo / "calc.py").write_text(FIXED)
    git(repo, "commit", "-qam", "Fix add()")
    older = git(repo, "rev-parse", "HEAD").strip()
    (repo / "selfforge.toml").write_text(directives())
    git(repo, "add", "selfforge.toml")
    git(repo, "commit", "-qm", "selfforge directives")
    proc = _selfforge("check", "--repo", str(repo), older)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    base = git(repo, "rev-parse", f"{older}~1").strip()
    said = f"directives: selfforge.toml from the working tree (the base {base[:10]} predates it)"
    assert said in proc.stdout
    # a checkout of the older commit has none: the message says where they are
    git(repo, "checkout", "-q", "--detach", older)
    detached = _selfforge("check", "--repo", str(repo))
    assert detached.returncode == 2, detached.stdout + detached.stderr
    assert "no selfforge.toml in the working tree" in detached.stderr
    assert "the branch main has one" in detached.stderr and "git checkout main" in detached.stderr


# -- a cmd: agent's program, checked before the run ------------------------------------

TASK = "Fix add() so test_add passes"
AGENT = "#!/bin/sh\nsed -i '2s/a - b/a + b/' calc.py\n"


def _agent_beside(tmp_path: Path) -> Path:
    """An agent program beside the repository (under /tmp: hidden in every sandbox)."""
    program = tmp_path / "my-agent.sh"
    program.write_text(AGENT)
    program.chmod(0o755)
    return program


def _run_agent(
    repo: Path, agent: str, script, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    return _selfforge(
        "run", "--repo", str(repo), "--model", script(), "--task", TASK, "--agent", agent,
        env=env,
    )  # fmt: skip


def test_a_cmd_agent_beside_the_repository_is_shown_to_the_sandbox(
    repo: Path, tmp_path: Path, script
) -> None:
    program = _agent_beside(tmp_path)
    assert str(program).startswith("/tmp/") or Path.home() in program.parents
    proc = _run_agent(repo, f"cmd:{program} {{task_file}}", script)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [attempt] = json.loads(_selfforge("log", "--json", "--repo", str(repo)).stdout)
    assert attempt["outcome"] == "accepted", attempt  # it was: exit 127, "no edits"


def test_a_cmd_agent_found_on_path_in_a_hidden_place_is_shown_to_the_sandbox(
    repo: Path, tmp_path: Path, script
) -> None:
    """A program on PATH in a folder the sandbox hides (here under /tmp; ~/.local/bin
    alike): found by its name, shown at its own path."""
    program = _agent_beside(tmp_path)
    (tmp_path / "bin").mkdir()
    program = program.rename(tmp_path / "bin" / "my-agent-xyz")
    path = f"{program.parent}{os.pathsep}{os.environ['PATH']}"
    proc = _run_agent(repo, "cmd:my-agent-xyz {task_file}", script, env={"PATH": path})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [attempt] = json.loads(_selfforge("log", "--json", "--repo", str(repo)).stdout)
    assert attempt["outcome"] == "accepted", attempt


@pytest.mark.parametrize("where", ["beside", "untracked"])
def test_a_cmd_agent_the_copy_will_not_have_is_refused_before_the_run(
    repo: Path, tmp_path: Path, script, where: str
) -> None:
    program = _agent_beside(tmp_path)  # ../my-agent.sh from the repository
    if where == "untracked":
        program = program.rename(repo / "my-agent.sh")
    word = "../my-agent.sh" if where == "beside" else "./my-agent.sh"
    proc = _run_agent(repo, f"cmd:{word} {{task_file}}", script)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    why = "is outside the repository" if where == "beside" else "is not committed"
    assert why in proc.stderr and f"give its absolute path ({program})" in proc.stderr
    assert not (repo / ".selfforge" / "journal.db").exists()  # refused before the run


def test_a_cmd_agent_whose_program_is_missing_is_refused_before_the_run(repo: Path, script) -> None:
    proc = _run_agent(repo, "cmd:no-such-agent-xyz {task_file}", script)
    assert proc.returncode == 2 and "`no-such-agent-xyz` is not on PATH" in proc.stderr
    proc = _run_agent(repo, "cmd:/nowhere/agent.sh {task_file}", script)
    assert proc.returncode == 2 and "/nowhere/agent.sh does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr
