"""`bench mine` and `bench run` on a Node project whose dependency comes from its setup
command: the instance records `[checks] setup`, mining and every replay install it once
per set of manifests (outside the candidate's reach) and show it read-only to the tests;
the gold lands, its planted bug is rejected. The setup here makes the package itself,
offline: the tests take no network."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import cli, git, make_repo, replay_every_kind

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

PACKAGE = {"name": "shop", "version": "1.0.0", "scripts": {"test": "node --test"}}
PACKAGE["dependencies"] = {"leftpad": "*"}
# What `npm ci` would do, without the registry: the dependency lands in node_modules.
SETUP = (
    "mkdir -p node_modules/leftpad && "
    "printf 'module.exports = (s, n) => String(s).padStart(n);\\n' > node_modules/leftpad/index.js"
)
PAD = "const leftpad = require('leftpad');\n\nexports.pad = (s) => leftpad(s, 6);\n"
PAD_TEST = """const test = require('node:test');
const assert = require('node:assert');
const { pad } = require('../pad.js');

test('pads', () => {
  assert.strictEqual(pad('ab'), '    ab');
});
"""
PRICE = """
exports.price = (cents) => {
  if (cents < 0) {
    return leftpad('-', 6);
  }
  return leftpad((cents / 100).toFixed(2), 6);
};
"""
PRICE_TEST = """
test('prices', () => {
  const { price } = require('../pad.js');
  assert.strictEqual(price(250), '  2.50');
  assert.strictEqual(price(-1), '     -');
});
"""


def price_history(tmp_path: Path) -> Path:
    """A Node project whose `pad` needs its dependency, and a commit that adds `price`
    with its test."""
    files = {
        "package.json": json.dumps(PACKAGE, indent=2),
        "pad.js": PAD,
        "test/pad.test.js": PAD_TEST,
        ".gitignore": "node_modules/\n",
    }
    repo = make_repo(tmp_path / "shop", files)
    (repo / "pad.js").write_text(PAD + PRICE)
    (repo / "test/pad.test.js").write_text(PAD_TEST + PRICE_TEST)
    git(repo, "commit", "-qam", "Add price(cents)")
    return repo


@pytest.mark.slow  # mines and replays with node
def test_a_node_history_with_a_setup_is_mined_and_replayed(tmp_path: Path) -> None:
    repo = price_history(tmp_path)
    instances = tmp_path / "js.jsonl"
    proc = cli(
        "bench", "mine", "--repo", str(repo), "--out", str(instances), "--setup", SETUP
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert inst["setup"] == SETUP and inst["runner"] == "node"
    assert inst["fail_to_pass"] == ["test/pad.test.js::prices"]
    assert inst["pass_to_pass"] == ["test/pad.test.js::pads"]  # it needed the dependency
    assert inst["negative_patch"]
    rows = replay_every_kind(instances, tmp_path)
    assert rows["gold"]["landed"] and rows["gold"]["solved"], rows["gold"]
    # The planted bug, the gold with its target test skipped, deleted or emptied, and
    # with a test script that selects no test: all rejected. (One hunk: no `incomplete`;
    # Node's runner runs each file in its own process: no `order`.)
    drawn = {k: r for k, r in rows.items() if k != "gold" and r["skipped"] is None}
    assert set(drawn) == {"bug", "skip-target", "delete-target", "weaken-target", "infra"}
    assert not any(r["landed"] or r["error"] for r in drawn.values()), drawn
    assert "adds a skip or focus (test.skip('prices'" in rows["skip-target"]["reasons"][0]
    assert "package.json" in rows["infra"]["reasons"][0]
    assert "each test file apart" in rows["order"]["skipped"]
    assert not (repo / "node_modules").exists()  # nothing installed in the user's repo


@pytest.mark.slow  # mines with node
def test_a_commit_whose_setup_fails_is_skipped_not_the_whole_mining(tmp_path: Path) -> None:
    """A dependency version that the registry no longer has makes that commit's setup
    fail: mining goes on with the other commits."""
    repo = price_history(tmp_path)
    gone = {**PACKAGE, "dependencies": {"leftpad": "*", "gone": "9.9.9"}}
    (repo / "package.json").write_text(json.dumps(gone, indent=2))
    git(repo, "commit", "-qam", "Depend on gone@9.9.9")
    (repo / "pad.js").write_text(PAD + PRICE + "\nexports.zero = () => exports.price(0);\n")
    (repo / "test/pad.test.js").write_text(
        PAD_TEST
        + PRICE_TEST
        + "\ntest('zero', () => { assert.ok(require('../pad.js').zero()); });\n"
    )
    git(repo, "commit", "-qam", "Add zero()")
    # What npm does when the registry lost a version: the install fails.
    setup = f"if grep -q gone package.json; then exit 1; fi; {SETUP}"
    instances = tmp_path / "js.jsonl"
    proc = cli(
        "bench", "mine", "--repo", str(repo), "--out", str(instances), "--setup", setup
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (inst,) = [json.loads(line) for line in instances.read_text().splitlines()]
    assert inst["message"] == "Add price(cents)"


def test_the_bench_own_junit_run_leaves_the_clone_clean(tmp_path: Path) -> None:
    """A runner that writes a JUnit report into the tree (here Node's own junit reporter)
    is read, and the report goes: a dirty clone would make selfforge keep the gold on a
    branch instead of landing it."""
    from selfforge.bench.testrun import Suite, run_tests

    repo = make_repo(
        tmp_path / "shop",
        {
            "pad.test.js": PAD_TEST.replace("../pad.js", "./pad.js"),
            "pad.js": "exports.pad = (s) => String(s).padStart(6);\n",
        },
    )
    command = "node --test --test-reporter=junit --test-reporter-destination=report.xml"
    ran = run_tests(repo, Suite(command, "junit", "report.xml"), [], 120)
    assert ran.outcomes and set(ran.outcomes.values()) == {"passed"}, ran.output
    assert not (repo / "report.xml").exists()
    assert git(repo, "status", "--porcelain") == ""
