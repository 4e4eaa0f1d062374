"""action.yml, the composite GitHub Action: each `run:` step executed as written, by bash
as GitHub runs it (`bash --noprofile --norc -eo pipefail`), with the `${{ ... }}`
expressions of its `env:` replaced the way GitHub would, on a sample repository: a fix
accepted (the outputs and the job summary written), a cheat rejected, a declared
behaviour change failing the step unless `fail-on-review: false`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import CALC, IDENTITY, TEST_CALC, built_once, directives, git, make_repo

SELFFORGE = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((SELFFORGE / "action.yml").read_text())
STEPS = ACTION["runs"]["steps"]
FIXED = CALC.replace("return a - b", "return a + b", 1)
_EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def _context(inputs: dict[str, str], base_ref: str = "") -> dict[str, str]:
    """What GitHub would put in each expression the action uses (``base_ref``: a pull
    request's base branch)."""
    values = {f"inputs.{k}": v.get("default", "") for k, v in ACTION["inputs"].items()}
    values |= {f"inputs.{k}": v for k, v in inputs.items()}
    return values | {
        "github.action_path": str(SELFFORGE),
        "github.base_ref": base_ref,
        # actions/setup-python's output with update-environment: false (the test's Python)
        "steps.python.outputs.python-path": sys.executable,
    }


def _run_step(
    step: dict, inputs: dict[str, str], repo: Path, temp: Path, base_ref: str = ""
) -> tuple[int, str]:
    context = _context(inputs, base_ref)
    env = {
        k: _EXPRESSION.sub(lambda m: context[m[1]], str(v)) for k, v in step.get("env", {}).items()
    }
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        (temp / name).unlink(missing_ok=True)
    script = temp / "step.sh"
    script.write_text(step["run"])
    assert step["shell"] == "bash"
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=repo, capture_output=True, text=True,
        env={**os.environ, **IDENTITY, **env, "RUNNER_TEMP": str(temp),
             "GITHUB_OUTPUT": str(temp / "GITHUB_OUTPUT"),
             "GITHUB_STEP_SUMMARY": str(temp / "GITHUB_STEP_SUMMARY")},
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def runner_temp(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The steps before the check, run once for the whole run (selfforge installed from
    the action's path); each test's RUNNER_TEMP, for its outputs, links that install."""
    setup = STEPS[0]
    assert setup["uses"].startswith("actions/setup-python@")
    assert setup["with"]["update-environment"] is False  # the job's Python stays first

    def install(temp: Path) -> None:
        for step in STEPS[1:-1]:
            status, out = _run_step(step, {}, temp, temp)
            assert status == 0, f"{step.get('name')}: {out}"

    installed = built_once(tmp_path_factory, "action-runner-temp", install)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    (temp / "selfforge-venv").symlink_to(installed / "selfforge-venv")
    assert (temp / "selfforge-venv" / "bin" / "selfforge").is_file()
    return temp


def _check(
    repo: Path, temp: Path, base_ref: str = "", **inputs: str
) -> tuple[int, dict[str, str], str]:
    step = STEPS[-1]
    assert step["id"] == "check"
    status, out = _run_step(step, inputs, repo, temp, base_ref)
    lines = (temp / "GITHUB_OUTPUT").read_text().splitlines()
    outputs = dict(line.split("=", 1) for line in lines)
    return status, outputs, out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "commit", "-qam", message)


def test_the_action_accepts_a_fix_and_writes_outputs_and_summary(
    repo: Path, runner_temp: Path
) -> None:
    """With a declared measure (issue 42.5), the step summary carries the measures table."""
    size = '\n[[measures]]\nname = "size"\nkind = "size"\nfile = "calc.py"\n'
    _commit(
        repo, "a size measure", {"selfforge.toml": (repo / "selfforge.toml").read_text() + size}
    )
    _commit(repo, "Fix add()", {"calc.py": FIXED})
    status, outputs, out = _check(repo, runner_temp)  # no base: HEAD~1
    assert status == 0, out
    assert outputs["verdict"] == "accepted" and outputs["exit-code"] == "0", out
    assert "accepted: all gates passed" in out
    summary = (runner_temp / "GITHUB_STEP_SUMMARY").read_text()
    assert "selfforge check" in summary and "accepted" in summary
    assert "| measure | base | candidate | change [interval] | runs | verdict |" in summary
    assert f"| size | {len(CALC)} bytes | {len(FIXED)} bytes | " in summary, summary
    assert "| 1 | unchanged |" in summary, summary


def test_the_action_rejects_a_cheat_on_a_branch(repo: Path, runner_temp: Path) -> None:
    git(repo, "checkout", "-qb", "feature")
    _commit(repo, "Fix add()", {"calc.py": FIXED})
    cheat = {
        "calc.py": FIXED.replace(
            "def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a"
        ),
        "test_calc.py": TEST_CALC.replace("sub(5, 3) == 2", "sub(5, 3) in (2, 5)"),
    }
    _commit(repo, "Simplify sub", cheat)
    status, outputs, out = _check(repo, runner_temp, base="main")
    assert status == 1, out
    assert outputs["verdict"] == "rejected" and "test_sub" in out, out
    assert json.loads(Path(outputs["json"]).read_text())["verdict"] == "rejected"


def test_a_declared_change_needs_review_and_fails_unless_told_not_to(
    repo: Path, runner_temp: Path
) -> None:
    _commit(
        repo,
        "sub() returns b - a",
        {
            "calc.py": CALC.replace(
                "def sub(a, b):\n    return a - b", "def sub(a, b):\n    return b - a"
            ),
            "test_calc.py": TEST_CALC.replace("sub(5, 3) == 2", "sub(5, 3) == -2"),
        },
    )
    args = "--changes test_calc.py::test_sub"
    status, outputs, out = _check(repo, runner_temp, args=args)
    assert status == 3 and outputs["verdict"] == "needs_review", out
    status, outputs, out = _check(repo, runner_temp, args=args, **{"fail-on-review": "false"})
    assert status == 0 and outputs["verdict"] == "needs_review", out
    assert outputs["exit-code"] == "3"


def test_a_base_that_is_not_there_is_said_in_the_summary(repo: Path, runner_temp: Path) -> None:
    status, outputs, out = _check(repo, runner_temp, base="origin/nowhere")
    assert status == 2 and outputs["verdict"] == "error", out
    summary = (runner_temp / "GITHUB_STEP_SUMMARY").read_text()
    assert "could not judge" in summary and "origin/nowhere" in summary


def test_the_guides_workflow_gates_a_pull_request(tmp_path: Path, runner_temp: Path) -> None:
    """docs/guides/ci-gate.md's workflow: its inputs are the action's, and on a pull
    request (a clone, its base branch at origin/main) the fix on the branch is accepted."""
    origin = make_repo(
        tmp_path / "origin", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives()
    )
    repo = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(repo))
    git(repo, "checkout", "-qb", "feature")
    _commit(repo, "Fix add()", {"calc.py": FIXED})
    guide = (SELFFORGE / "docs" / "guides" / "ci-gate.md").read_text()
    block = re.search(r"```yaml\n(name: selfforge gate\n.*?)```", guide, re.S)
    assert block, "the guide's workflow"
    steps = yaml.safe_load(block[1])["jobs"]["judge"]["steps"]
    ours = [s for s in steps if s.get("uses", "").endswith("/selfforge@main")]
    assert len(ours) == 1
    inputs = {k: str(v) for k, v in ours[0].get("with", {}).items()}
    assert set(inputs) <= set(ACTION["inputs"])
    status, outputs, out = _check(repo, runner_temp, base_ref="main", **inputs)
    assert status == 0 and outputs["verdict"] == "accepted", out
