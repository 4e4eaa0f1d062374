"""The judge's parts on their own: the results channel, the gates' agreement rules, the
reporting gate, secret masking, the sandbox's limits and its refusal to run unsandboxed."""

from __future__ import annotations

import ast
import base64
import json
import os
import socket
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from selfforge.judge.criterion import for_task, progress_gate
from selfforge.judge.gates import regression_gate, run_gate
from selfforge.judge.rules.integrity import reporting_gate
from selfforge.judge.runners.channel import Channel
from selfforge.judge.runners.results import TestReport as Report
from selfforge.judge.runners.results import report_from_records
from selfforge.judge.sandbox.command import CheckSpace, CommandResult, run_command
from selfforge.judge.sandbox.limits import Limits
from selfforge.judge.verdict import Observed
from selfforge.models import secrets
from selfforge.repo.testpaths import DEFAULT, rule_for

from conftest import FIX_ADD, cli

SRC = Path(__file__).resolve().parents[1] / "src" / "selfforge"


def _result(exit_code: int) -> CommandResult:
    return CommandResult("pytest", exit_code, False, 0.1, "")


def test_a_forged_pass_cannot_hide_a_real_failure(tmp_path: Path) -> None:
    records = [
        {"ev": "start", "rootdir": str(tmp_path)},
        {"ev": "test", "id": "t.py::a", "when": "call", "outcome": "failed", "msg": "boom"},
        {"ev": "test", "id": "t.py::a", "when": "call", "outcome": "passed"},  # forged
        {"ev": "finish", "exitstatus": 1},
    ]
    report = report_from_records(records, tmp_path)
    assert report is not None and report.outcomes["t.py::a"] == "failed"


def test_exit_code_and_results_must_agree(tmp_path: Path) -> None:
    failing = report_from_records(
        [
            {"ev": "start", "rootdir": str(tmp_path)},
            {"ev": "test", "id": "t.py::a", "when": "call", "outcome": "failed"},
            {"ev": "finish", "exitstatus": 1},
        ],
        tmp_path,
    )
    passing = report_from_records(
        [
            {"ev": "start", "rootdir": str(tmp_path)},
            {"ev": "test", "id": "t.py::a", "when": "call", "outcome": "passed"},
            {"ev": "finish", "exitstatus": 0},
        ],
        tmp_path,
    )
    assert "disagree" in run_gate(_result(0), failing).reason
    assert "disagree" in run_gate(_result(1), passing).reason
    assert run_gate(_result(1), failing).ok and run_gate(_result(0), passing).ok
    unfinished = report_from_records([{"ev": "start", "rootdir": str(tmp_path)}], tmp_path)
    assert "stopped before it finished" in run_gate(_result(0), unfinished).reason


def test_a_test_that_passed_before_must_still_pass() -> None:
    base = Report({"t::a": "passed", "t::b": "passed", "t::c": "failed", "t::d": "passed"})
    # b now fails, d was not run (a run of the tests a change reaches), a is flaky.
    reached = Report({"t::a": "failed", "t::b": "failed", "t::c": "passed"})
    verdict = regression_gate(base, reached, {"t::a"}, "output", partial=True)
    assert not verdict.ok and verdict.details == ["t::b: passed → failed"]
    assert verdict.reason == "1 test(s) passed before and fail now: t::b: passed → failed"
    # The same run judged as the full suite: d is gone, so it no longer passes either.
    full = regression_gate(base, reached, {"t::a"}, "output")
    assert full.details == ["t::b: passed → failed", "t::d: passed → no longer collected"]
    assert regression_gate(base, base, set(), "output").ok


def test_xfail_and_xpass_are_their_own_outcomes(tmp_path: Path) -> None:
    report = report_from_records(
        [
            {"ev": "start", "rootdir": str(tmp_path)},
            {"ev": "test", "id": "t.py::x", "when": "call", "outcome": "xfailed"},
            {"ev": "test", "id": "t.py::y", "when": "call", "outcome": "xpassed"},
            {"ev": "finish", "exitstatus": 0},
        ],
        tmp_path,
    )
    assert report is not None
    assert report.outcomes == {"t.py::x": "xfailed", "t.py::y": "xpassed"}
    assert not report.failing and not report.passed


def test_changing_how_results_are_reported_is_rejected() -> None:
    for path in ("sitecustomize.py", "pkg/conftest.py", "x.pth"):
        assert not reporting_gate({path: "A"}, "", DEFAULT).ok, path
    diff = "diff --git a/pkg/core.py b/pkg/core.py\n+import _pytest.runner\n"
    assert "test runner" in reporting_gate({"pkg/core.py": "M"}, diff, DEFAULT).reason
    assert reporting_gate({"pkg/core.py": "M"}, "+x = 1\n", DEFAULT).ok


def test_the_test_path_rule_comes_from_the_pytest_configuration(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\ntestpaths = qa\n")
    rule = rule_for(tmp_path)
    assert rule.is_test_file("pkg/check_calc.py") and not rule.is_test_file("pkg/test_x.py")
    assert rule.is_test_path("qa/helpers.py") and rule.is_test_path("pkg/conftest.py")
    assert DEFAULT.is_test_path("pkg/test_calc.py") and DEFAULT.is_test_path("a/b/x_test.py")


def test_a_testpaths_entry_that_is_the_code_itself_holds_no_test_code_but_its_tests(
    tmp_path: Path,
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = toolz src checks\n")
    (tmp_path / "toolz").mkdir()
    (tmp_path / "toolz/__init__.py").write_text("")
    rule = rule_for(tmp_path)
    assert not rule.is_test_path("toolz/functoolz.py") and not rule.is_test_path("src/a.py")
    assert rule.is_test_path("toolz/tests/test_functoolz.py") and rule.is_test_path("checks/h.py")


def test_keys_are_masked_in_every_encoding() -> None:
    key = "sk-test-canary-0123456789abcdef"
    secrets.remember(key)
    for shown in (
        key,
        key.encode().hex(),
        quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(b"x" + key.encode() + b"yz").decode(),
        base64.b64encode(b"ab" + key.encode()).decode(),
    ):
        assert shown[4:-4] not in secrets.mask(f"output: {shown} end"), shown


def _space(tmp_path: Path, **limits: int) -> CheckSpace:
    return CheckSpace(repo=tmp_path / "checkout", limits=Limits(**limits), output_kb=64)


@pytest.mark.parametrize(
    ("command", "limits", "limit"),
    [
        (f'{sys.executable} -c "b = bytearray(600 * 1024 * 1024)"', {"memory_mb": 256}, "memory"),
        ("for i in $(seq 1 200); do sleep 2 & done; wait", {"processes": 32}, "processes"),
        ("yes | head -c 2000000", {}, "output"),
    ],
    ids=["memory", "processes", "output"],
)
def test_hitting_a_limit_fails_the_check_and_names_it(
    tmp_path: Path, command: str, limits: dict[str, int], limit: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    result = run_command(command, tree, 60, _space(tmp_path, **limits))
    assert result.limit == limit, result.output
    assert f"{limit} limit" in result.output
    control = run_command(command, tree, 60, _space(tmp_path, memory_mb=4096, processes=1024))
    if limit != "output":
        assert control.limit is None and control.exit_code == 0, control.output


def test_without_bubblewrap_run_refuses_unless_the_user_opts_out(calc_repo: Path, script) -> None:
    env = {"SELFFORGE_BWRAP": "/nonexistent/bwrap"}
    proc = cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), env=env)
    assert proc.returncode == 1 and "bubblewrap" in proc.stderr and "--no-sandbox" in proc.stderr
    assert "Traceback" not in proc.stderr
    spec = script(propose=[FIX_ADD])
    opted = cli("run", "--repo", str(calc_repo), "--model", spec, "--no-sandbox", env=env)
    assert opted.returncode == 0, opted.stderr
    assert "warning" in opted.stderr and "your rights" in opted.stderr


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("selfforge")}


def test_no_import_cycle_between_the_packages() -> None:
    """cli/commands → run (session → loop → attempt) → judge → repo (workspace/git) →
    journal. test_layout.py checks every part's order; this keeps the judge's own."""
    order = ["judge", "run", "cli"]
    for path in (SRC / "judge").rglob("*.py"):
        for module in _imports(path):
            above = module.split(".")[1] if "." in module else ""
            assert above not in order[1:], f"{path.name} imports {module}"
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        graph[name] = _imports(path)
    package = {n: n.split(".")[1] if n.count(".") else n for n in graph}
    edges = {
        (package[a], package.get(b, b.split(".")[1] if "." in b else b))
        for a, targets in graph.items()
        for b in targets
    }
    assert ("judge", "run") not in edges
    assert ("repo", "run") not in edges and ("journal", "run") not in edges


def _observed(outcomes: dict[str, str]) -> Observed:
    report = Report(outcomes=outcomes)
    return Observed(
        tests=report, tests_result=_result(0 if "failed" not in outcomes.values() else 1)
    )


def test_a_task_that_names_its_tests_needs_every_one_to_pass() -> None:
    baseline = _observed(
        {"t.py::test_a": "failed", "t.py::test_b": "failed", "t.py::test_c": "passed"}
    )
    task = "Add halve(). The failing tests must pass: t.py::test_a, t.py::test_b"
    criterion = for_task(task, baseline)
    assert criterion.every and criterion.targets == ["t.py::test_a", "t.py::test_b"]
    half = _observed({"t.py::test_a": "passed", "t.py::test_b": "failed", "t.py::test_c": "passed"})
    verdict = progress_gate(baseline, half, criterion)
    assert not verdict.ok
    assert "1 of the 2" in verdict.reason and "t.py::test_b" in verdict.reason
    assert "t.py::test_a" not in verdict.reason
    both = _observed({"t.py::test_a": "passed", "t.py::test_b": "passed", "t.py::test_c": "passed"})
    assert progress_gate(baseline, both, criterion).ok


def test_a_named_target_that_passes_only_sometimes_is_not_done() -> None:
    baseline = _observed({"t.py::test_a": "failed", "t.py::test_b": "failed"})
    criterion = for_task("Make t.py::test_a and t.py::test_b pass", baseline)
    both = _observed({"t.py::test_a": "passed", "t.py::test_b": "passed"})
    both.flaky = {"t.py::test_b"}
    verdict = progress_gate(baseline, both, criterion)
    assert not verdict.ok and "t.py::test_b: flaky" in verdict.reason


def test_naming_a_test_class_or_file_names_the_tests_in_it() -> None:
    baseline = _observed(
        {
            "tests/test_m.py::Suite::test_a": "failed",
            "tests/test_m.py::Suite::test_ab": "failed",
            "tests/test_m.py::Other::test_c": "failed",
            "tests/test_n.py::test_d": "failed",
        }
    )
    in_class = for_task("Make tests/test_m.py::Suite pass.", baseline)
    assert in_class.every and in_class.targets == [
        "tests/test_m.py::Suite::test_a",
        "tests/test_m.py::Suite::test_ab",
    ]
    in_file = for_task("Make the tests in tests/test_m.py pass", baseline)
    assert in_file.every and len(in_file.targets) == 3
    # A longer id is another test: naming Suite::test_a names neither test_ab nor Suite.
    only_a = for_task("Fix tests/test_m.py::Suite::test_a", baseline)
    assert only_a.targets == ["tests/test_m.py::Suite::test_a"]


def test_a_broad_request_still_lands_partial_progress() -> None:
    baseline = _observed({"t.py::test_add": "failed", "t.py::test_mul": "failed"})
    for task in ("Make the failing tests pass", "Fix add()"):
        criterion = for_task(task, baseline)
        assert criterion.kind == "tests" and not criterion.every, task
        half = _observed({"t.py::test_add": "passed", "t.py::test_mul": "failed"})
        assert progress_gate(baseline, half, criterion).ok, task


def test_the_results_channel_keeps_every_record_sent_before_it_closes() -> None:
    """close() wakes the listener at once (no polling) and still reads every connection
    made before it, whether or not it was accepted yet."""
    channel = Channel()
    path = channel.socket_path(False)
    token = os.pread(channel.secret_fd, 64, 0).decode()
    for n in range(5):
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)
        hello = json.dumps({"ev": "hello", "token": token})
        client.sendall(f"{hello}\n{json.dumps({'ev': 'collected', 'n': n})}\n".encode())
        client.close()
    channel.close()
    assert sorted(r["n"] for r in channel.records) == [0, 1, 2, 3, 4]
    assert channel.problem is None
    assert not channel.dir.exists()
