"""`[checks] setup`: dependencies installed once per set of manifests, from the base
commit's files, with the network; every check sees them read-only and offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from test_runner_node import FIX, NODE_20, TASK

from conftest import cli, directives, git, log_json, make_repo, trees_dir

pytestmark = pytest.mark.skipif(not NODE_20, reason="needs node 20 or later")

PACKAGE = json.dumps({"name": "m", "version": "1.0.0", "scripts": {"test": "node --test"}})
# The "install": copies a vendored package into node_modules, as `npm ci` would fetch it.
SETUP = "mkdir -p node_modules/twice && cp vendor/twice.js node_modules/twice/index.js"
MATH = (
    "const twice = require('twice');\nexports.add = (a, b) => a - b;\n"
    "exports.sub = (a, b) => a - b;\nexports.double = twice;\n"
)
TESTS = """const test = require('node:test');
const assert = require('node:assert');
const { add, sub, double } = require('../math.js');

test('adds', () => { assert.strictEqual(add(2, 3), 5); });
test('subtracts', () => { assert.strictEqual(sub(5, 3), 2); });
test('doubles', () => { assert.strictEqual(double(4), 8); });
"""


def _repo(tmp_path: Path, setup: str = SETUP) -> Path:
    text = directives("node --test").replace(
        "[checks]\n", f"[checks]\nsetup = {json.dumps(setup)}\n", 1
    )
    files = {
        "package.json": PACKAGE,
        "math.js": MATH,
        "test/math.test.js": TESTS,
        "vendor/twice.js": "module.exports = (x) => 2 * x;\n",
        ".gitignore": "node_modules/\n",
    }
    return make_repo(tmp_path / "repo", files, text)


def _run(repo: Path, spec: str):
    return cli("run", "--repo", str(repo), "--model", spec, "--task", TASK, "--json")


def test_setup_installs_once_and_checks_use_it(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path)
    first = _run(repo, script(propose=[FIX]))
    assert log_json(repo)[-1]["outcome"] == "accepted", first.stdout + first.stderr
    assert "installed" in first.stdout and "node_modules" in first.stdout
    assert not (repo / "node_modules").exists()  # the user's checkout is left alone
    # The landing changed no manifest: the next run reuses the install.
    second = _run(
        repo, script(propose=[FIX.replace("a + b", "b + a").replace("a - b;\n", "a + b;\n", 1)])
    )
    assert "setup: reused" in second.stdout


def test_checks_cannot_write_what_setup_installed(tmp_path: Path, script) -> None:
    """A candidate whose tests overwrite an installed package: read-only, so the write
    fails, and the next check sees the package as installed."""
    poison = (
        "math.js\n<<<<<<< SEARCH\nexports.add = (a, b) => a - b;\n=======\n"
        "exports.add = (a, b) => a + b;\n"
        "try { require('fs').writeFileSync(require.resolve('twice'), 'module.exports = 0;'); }"
        " catch (e) { console.log('blocked: ' + e.code); }\n"
        ">>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path)
    _run(repo, script(propose=[poison]))
    setup_trees = list((trees_dir(repo) / "setup").glob("*/tree"))
    assert not (repo / ".selfforge" / "setup").exists()
    assert len(setup_trees) == 1
    installed = setup_trees[0] / "node_modules" / "twice" / "index.js"
    assert installed.read_text() == "module.exports = (x) => 2 * x;\n"


def test_setup_has_the_network_and_checks_do_not(
    tmp_path: Path, script, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/pkg").respond_with_data("module.exports = (x) => 2 * x;\n")
    url = httpserver.url_for("/pkg")
    fetch = (
        "mkdir -p node_modules/twice && node -e \"fetch('" + url + "').then(r => r.text())"
        ".then(t => require('fs').writeFileSync('node_modules/twice/index.js', t))\""
    )
    repo = _repo(tmp_path, fetch)
    reach = (
        "math.js\n<<<<<<< SEARCH\nexports.add = (a, b) => a - b;\n=======\n"
        f"exports.add = (a, b) => a + b;\nfetch('{url}').catch(() => {{}});\n"
        ">>>>>>> REPLACE\n"
    )
    proc = _run(repo, script(propose=[reach]))
    assert log_json(repo)[-1]["outcome"] == "accepted", proc.stdout + proc.stderr
    assert len(httpserver.log) == 1  # the setup fetched; nothing else did


def test_a_failing_setup_stops_the_run_with_the_fix(tmp_path: Path, script) -> None:
    repo = _repo(tmp_path, "exit 3")
    proc = _run(repo, script(propose=[FIX]))
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "the setup command `exit 3` exited 3" in out and "[checks] setup" in out
    assert "Traceback" not in out
    git(repo, "status", "--porcelain")


def test_check_installs_the_base_s_setup_before_judging(tmp_path: Path) -> None:
    """`selfforge check` of a teammate's commit in a project that needs its setup: the
    base's manifests are installed first, as for `run` (without, every test failed to
    load on both sides and a regression passed as "nothing got worse")."""
    repo = _repo(tmp_path)
    (repo / "math.js").write_text(
        MATH.replace("exports.double = twice;", "exports.double = (x) => x;")
    )
    git(repo, "commit", "-qam", "Simpler double")
    proc = cli("check", "--repo", str(repo), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "rejected" and "doubles" in verdict["reason"], verdict
    assert not (repo / "node_modules").exists()  # the user's checkout is left alone
