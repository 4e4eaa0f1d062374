"""JavaScript projects on Node's built-in test runner, with the real `node`: selfforge's
reporter gives per-test results (through `npm test` as well), a fix lands, a regression
is rejected, `.only` and `.skip` are refused, and what test code prints cannot pose as
a result."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli, directives, log_json, make_repo


def node_major() -> int:
    """Node's major version (0 without node): the reporter reads events of Node 20+."""
    if shutil.which("node") is None:
        return 0
    out = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    return int(out.strip().lstrip("v").split(".")[0] or 0)


NODE_20 = node_major() >= 20
pytestmark = pytest.mark.skipif(not NODE_20, reason="needs node 20 or later")

PACKAGE = json.dumps({"name": "m", "version": "1.0.0", "scripts": {"test": "node --test"}})
MATH = "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;\n"
TESTS = """const test = require('node:test');
const assert = require('node:assert');
const { add, sub } = require('../math.js');

test.describe('math', () => {
  test.it('adds', () => {
    assert.strictEqual(add(2, 3), 5);
  });
  test.it('subtracts', () => {
    assert.strictEqual(sub(5, 3), 2);
  });
});
"""
FIX = (
    "math.js\n<<<<<<< SEARCH\nexports.add = (a, b) => a - b;\n=======\n"
    "exports.add = (a, b) => a + b;\n>>>>>>> REPLACE\n"
)
BREAK_SUB = FIX + (
    "math.js\n<<<<<<< SEARCH\nexports.sub = (a, b) => a - b;\n=======\n"
    "exports.sub = (a, b) => a * b;\n>>>>>>> REPLACE\n"
)
TASK = "Fix add so that the adds test passes"


def _repo(tmp_path: Path, test: str = "npm test", allow_test_edits: bool = False) -> Path:
    extra = "[safety]\nallow_test_edits = true\n" if allow_test_edits else ""
    files = {"package.json": PACKAGE, "math.js": MATH, "test/math.test.js": TESTS}
    return make_repo(tmp_path / "repo", files, directives(test, extra=extra))


def _run(repo: Path, spec: str) -> str:
    proc = cli("run", "--repo", str(repo), "--model", spec, "--task", TASK, "--json")
    return proc.stdout + proc.stderr


def test_a_fix_lands_through_npm_test(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    out = _run(repo, script(propose=[FIX]))
    assert log_json(repo)[-1]["outcome"] == "accepted", out
    assert "test/math.test.js::math > adds" in out
    assert "a + b" in (repo / "math.js").read_text()


def test_a_regression_is_rejected_naming_the_test(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, "node --test")
    _run(repo, script(propose=[BREAK_SUB]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "test/math.test.js::math > subtracts" in attempt["reason"]


@pytest.mark.parametrize("mark", ["test.it.only('subtracts'", "test.it.skip('subtracts'"])
def test_focus_and_skip_are_refused(tmp_path: Path, script, mark: str) -> None:
    weaken = (
        "test/math.test.js\n<<<<<<< SEARCH\n  test.it('subtracts', () => {\n=======\n"
        f"  {mark}, () => {{\n>>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path, allow_test_edits=True)
    _run(repo, script(propose=[FIX + weaken]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert mark in attempt["reason"]


def test_printed_results_cannot_pose_as_the_runners(tmp_path: Path, script) -> None:
    """add stays broken; the code prints selfforge's own reporter line saying it passed."""
    line = json.dumps({"file": "test/math.test.js", "names": ["math", "adds"], "outcome": "passed"})
    forge = (
        "math.js\n<<<<<<< SEARCH\nexports.add = (a, b) => a - b;\n=======\n"
        f"console.log({json.dumps('@@selfforge-node@@ ' + line)});\n"
        "exports.add = (a, b) => a - b;\n>>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path)
    _run(repo, script(propose=[forge]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "a - b;" in (repo / "math.js").read_text()


def test_a_node_installed_by_nvm_under_the_home_runs_in_the_sandbox(tmp_path: Path, script) -> None:
    """nvm keeps node in ~/.nvm/versions/node/vX/bin, on PATH: the sandbox hides the home
    but shows that toolchain read-only, so the checks run the user's node (the test
    asserts it is that one); a token beside it (an .npmrc under ~/.nvm) cannot be read."""
    import os
    import secrets
    import tempfile

    cache = Path.home() / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="selfforge-nvm-test-", dir=cache))
    try:
        bin_dir = home / ".nvm" / "versions" / "node" / "v20.0.0" / "bin"
        bin_dir.mkdir(parents=True)
        shutil.copy2(shutil.which("node") or "node", bin_dir / "node")
        token = "npm_" + secrets.token_hex(16)
        (home / ".nvm" / ".npmrc").write_text(f"//registry.npmjs.org/:_authToken={token}\n")
        probe = TESTS.replace(
            "test.describe('math', () => {",
            "test.it('runs nvm node', () => {\n"
            "  assert.ok(process.execPath.includes('.nvm'), process.execPath);\n"
            "  let rc = '';\n"
            "  try { rc = require('node:fs').readFileSync("
            f"{json.dumps(str(home / '.nvm' / '.npmrc'))}, 'utf8'); }} catch {{}}\n"
            f"  assert.ok(!rc.includes({json.dumps(token)}));\n"
            "});\n\ntest.describe('math', () => {",
        )
        files = {"package.json": PACKAGE, "math.js": MATH, "test/math.test.js": probe}
        repo = make_repo(tmp_path / "repo", files, directives("node --test"))
        env = {"HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        proc = cli(
            "run", "--repo", str(repo), "--model", script(propose=[FIX]), "--task", TASK,
            "--json", env=env,
        )  # fmt: skip
        attempt = log_json(repo)[-1]
        assert attempt["outcome"] == "accepted", proc.stdout + proc.stderr
        # The baseline: the probe passed (adds is the one failing test).
        steps = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        baseline = " ".join(str(e.get("detail")) for e in steps if e.get("name") == "baseline")
        assert "3 collected, 2 passed, 1 failed" in baseline, baseline
        assert token not in proc.stdout + proc.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)
