"""The bench's JavaScript `order` and `infra` negatives, with the real Mocha: the order
negative (a planted bug, and a test file loaded first that puts the gold code back in
Mocha's one process) really passes the suite in that order and fails without it, and the
judge rejects it; the infra negative (a `.mocharc.json` that selects no test) is refused
by name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from selfforge.bench import negatives
from selfforge.bench.records import Instance
from test_runner_js_frameworks import BIN, MATH, NODE_ASSERT, OUT, RUNNERS, SPEC

from conftest import cli, directives, git, log_json, make_repo

pytestmark = pytest.mark.skipif(not (BIN / "mocha").exists(), reason=f"needs mocha in {RUNNERS}")

COMMAND = f"{BIN}/mocha test/ --reporter xunit --reporter-option output={OUT}"
GOLD = (
    "diff --git a/math.js b/math.js\n--- a/math.js\n+++ b/math.js\n"
    "@@ -1,2 +1,2 @@\n-exports.add = (a, b) => a - b;\n+exports.add = (a, b) => a + b;\n"
    " exports.sub = (a, b) => a - b;\n"
)
PLANTED = (  # the gold, with sub broken
    "diff --git a/math.js b/math.js\n--- a/math.js\n+++ b/math.js\n"
    "@@ -1,2 +1,2 @@\n-exports.add = (a, b) => a - b;\n-exports.sub = (a, b) => a - b;\n"
    "+exports.add = (a, b) => a + b;\n+exports.sub = (a, b) => a * b;\n"
)


def _project(tmp_path: Path) -> tuple[Path, Instance]:
    text = directives(COMMAND).replace(
        "[checks]\n", f'[checks]\nrunner = "junit"\njunit = "{OUT}"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(RUNNERS))}]\n"
    files = {
        "package.json": json.dumps({"name": "m", "devDependencies": {"mocha": "*"}}),
        "math.js": MATH,
        "test/math.test.js": SPEC.format(**NODE_ASSERT),
    }
    repo = make_repo(tmp_path / "repo", files, text)
    head = git(repo, "rev-parse", "HEAD").strip()
    inst = Instance(
        instance_id="m-1",
        repo=str(repo),
        commit=head,
        parent=head,
        message="Fix add",
        test_files=["test/math.test.js"],
        test_targets=["test/math.test.js"],
        code_files=["math.js"],
        test_patch="",
        code_patch=GOLD,
        fail_to_pass=["test/math.test.js::math > adds"],
        pass_to_pass=["test/math.test.js::math > subtracts"],
        test_cmd=COMMAND,
        test_time_s=0.1,
        negative_patch=PLANTED,
        runner="junit",
        junit=OUT,
    )
    return repo, inst


def _mocha(tree: Path, *files: str) -> int:
    return subprocess.run([f"{BIN}/mocha", *files], cwd=tree, capture_output=True).returncode


def test_the_order_negative_passes_only_in_order_and_the_judge_rejects_it(
    tmp_path: Path, script
) -> None:
    repo, inst = _project(tmp_path)
    drawn = negatives.draw("order", repo, inst, lambda: True)
    assert "test/0-bench-setup.test.js" in drawn.patch and not git(repo, "status", "--short")
    trial = tmp_path / "trial"
    git(tmp_path, "clone", "-q", str(repo), str(trial))
    (tmp_path / "order.patch").write_text(drawn.patch)
    git(trial, "apply", str(tmp_path / "order.patch"))
    assert _mocha(trial, "test/") == 0  # loaded first, the setup file repairs sub
    assert _mocha(trial, "test/math.test.js") != 0  # alone, the planted bug shows
    cli("run", "--repo", str(repo), "--model", script(propose=[drawn.patch]), "--task", "Fix add")
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected", attempt
    assert "subtracts" in attempt["reason"]


def test_the_infra_negative_is_refused_naming_the_mocha_configuration(
    tmp_path: Path, script
) -> None:
    repo, inst = _project(tmp_path)
    drawn = negatives.draw("infra", repo, inst, lambda: True)
    assert ".mocharc.json" in drawn.note
    cli("run", "--repo", str(repo), "--model", script(propose=[drawn.patch]), "--task", "Fix add")
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert ".mocharc.json" in attempt["reason"]
