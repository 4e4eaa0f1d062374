"""The rest of issue 33's points 1 and 6, through the command line.

Point 1 (`selfforge check`): an xfail inside a test the change adds is the author's to
make, an xfail on a base test failing on the base already is a person's to review; a focus mark a
commit adds to a JS test (node:test, and Mocha, Vitest, Jest, which honour it) cannot
hide a regression; `allow_test_edits` says it no longer loosens anything. Point 6
(`selfforge run`): a unittest suite that collects nothing or whose only module does not
import, `node --test` with no test file, and a JS framework named in package.json with no
node_modules stop before the first model call, in the runner's own words with the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_baseline_stops import _reaches_the_model, _stops
from test_test_contract import JS_BIN, JS_RUNNERS
from test_test_contract import JS_FRAMEWORKS as RUNNER_LINES

from conftest import CALC, TEST_CALC, directives, git, make_repo

FIXED = CALC.replace("return a - b", "return a + b", 1)
ALLOW = "[safety]\nallow_test_edits = true\n"


def _node_major() -> int:
    if shutil.which("node") is None:
        return 0
    out = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    return int(out.strip().lstrip("v").split(".")[0] or 0)


NEEDS_NODE = pytest.mark.skipif(_node_major() < 20, reason="needs node 20 or later")


def _commit(repo: Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def _check(repo: Path, *args: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "HEAD", "--repo", str(repo), "--json", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _calc_repo(tmp_path: Path, files: dict[str, str] | None = None, extra: str = "") -> Path:
    files = files or {"calc.py": CALC, "test_calc.py": TEST_CALC}
    return make_repo(tmp_path / "r", files, directives(extra=extra))


# --- point 1: xfail is the author's in an added test, no fix on a failing base test ---

XFAIL_NEW = (
    "import pytest\n\nfrom calc import add, sub\n\n\n"
    "def test_add_big():\n    assert add(10, 20) == 30\n\n\n"
    "@pytest.mark.xfail(reason='sub of negatives is issue 12')\n"
    "def test_sub_negative():\n    assert sub(-1, -1) == 1\n"
)


def test_an_xfail_in_a_new_test_file_lands(tmp_path: Path) -> None:
    repo = _calc_repo(tmp_path)
    _commit(repo, "Fix add(); a known failure", {"calc.py": FIXED, "tests/test_more.py": XFAIL_NEW})
    code, verdict, _ = _check(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    assert "tests:new" in [s["name"] for s in verdict["steps"]]  # the xfailed test ran


def test_an_xfail_on_a_test_added_to_an_existing_file_lands(tmp_path: Path) -> None:
    added = (
        "\n\n@pytest.mark.xfail(reason='sub of negatives is issue 12')\n"
        "def test_sub_negative():\n    assert sub(-1, -1) == 1\n"
    )
    repo = _calc_repo(tmp_path)
    _commit(repo, "Fix add(); a known failure", {
        "calc.py": FIXED, "test_calc.py": "import pytest\n\n" + TEST_CALC + added,
    })  # fmt: skip
    code, verdict, _ = _check(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    assert "tests:new" in [s["name"] for s in verdict["steps"]]  # the xfailed test ran


def test_a_base_test_failing_on_the_base_and_xfailed_by_the_change_needs_review(
    tmp_path: Path,
) -> None:
    """test_add fails on the base (add subtracts); the change marks it xfail and leaves
    add() alone: nothing regressed (issue 41), but it fixes nothing either — a person
    reviews it, told what the change did to the test."""
    repo = _calc_repo(tmp_path)
    xfailed = "import pytest\n\n" + TEST_CALC.replace(
        "def test_add", "@pytest.mark.xfail(reason='later')\ndef test_add"
    )
    _commit(repo, "Known failure", {"test_calc.py": xfailed})
    code, verdict, _ = _check(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert verdict["review"] == [
        "xfails a test that already failed: test_calc.py::test_add: xfailed (an xfail mark "
        "added); failed on the base too; fails the same way on the new code (assert -1 == 5)"
    ]


def test_a_base_test_xfailed_by_code_the_change_adds_is_refused(tmp_path: Path) -> None:
    """The base's own xfail condition, turned on by the change's code."""
    tests = "import pytest\n\nimport calc\n\n\n" + TEST_CALC.replace(
        "def test_add", "@pytest.mark.xfail(calc.LATER, reason='later')\ndef test_add"
    )
    repo = _calc_repo(tmp_path, {"calc.py": CALC + "\nLATER = False\n", "test_calc.py": tests})
    _commit(repo, "Not now", {"calc.py": CALC + "\nLATER = True\n"})
    code, verdict, _ = _check(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert (
        "skipped by the change, not fixed: test_calc.py::test_add: failed → xfailed"
        in (verdict["reason"])
    )


# --- point 1: a focus mark added to a JS test hides no regression -------------------

MATH_JS = "exports.add = (a, b) => a + b;\nexports.sub = (a, b) => a - b;\n"
MATH_TEST_JS = """const test = require('node:test');
const assert = require('node:assert');
const { add, sub } = require('../math.js');

test('adds', () => {
  assert.strictEqual(add(2, 3), 5);
});

test('subtracts', () => {
  assert.strictEqual(sub(5, 3), 2);
});
"""
FOCUS = {
    "test.only": "test.only('adds', () => {",
    "it.only": "test.it.only('adds', () => {",
    "only: true": "test('adds', { only: true }, () => {",
}


def _node_repo(tmp_path: Path, test: str = "node --test", extra: str = "") -> Path:
    package = json.dumps({"name": "m", "version": "1.0.0", "scripts": {"test": "node --test"}})
    files = {"package.json": package, "math.js": MATH_JS, "test/math.test.js": MATH_TEST_JS}
    return make_repo(tmp_path / "r", files, directives(test, extra=extra))


@NEEDS_NODE
@pytest.mark.parametrize("focus", sorted(FOCUS))
def test_a_focus_added_to_a_node_test_cannot_hide_a_regression(tmp_path: Path, focus: str) -> None:
    """sub() breaks; the commit focuses the suite on 'adds' so that 'subtracts' would not
    run: the base's 'subtracts', run on the change's code, refuses it."""
    repo = _node_repo(tmp_path)
    _commit(repo, "Faster sub, focus", {
        "math.js": MATH_JS.replace("a - b", "a * b"),
        "test/math.test.js": MATH_TEST_JS.replace("test('adds', () => {", FOCUS[focus]),
    })  # fmt: skip
    code, verdict, _ = _check(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "test/math.test.js::subtracts: passed → failed" in verdict["reason"]


@pytest.mark.skipif(not (JS_BIN / "jest").exists(), reason=f"needs the JS runners in {JS_RUNNERS}")
@pytest.mark.parametrize("framework", sorted(RUNNER_LINES))
def test_a_focus_that_narrows_a_js_framework_s_run_cannot_hide_a_regression(
    tmp_path: Path, framework: str
) -> None:
    """Mocha, Vitest and Jest honour `.only`: the change's own suite runs 'adds' alone
    and passes. The base's version of the file, run on the change's code, still holds
    'subtracts', and refuses it."""
    check = (
        "require('node:assert').strictEqual({call}, {want})"
        if framework == "mocha"
        else "expect({call}).toBe({want})"
    )
    spec = (
        "const { add, sub } = require('../math.js');\n\n"
        f"it('adds', () => {{ {check.format(call='add(2, 3)', want=5)}; }});\n"
        f"it('subtracts', () => {{ {check.format(call='sub(5, 3)', want=2)}; }});\n"
    )
    text = directives(RUNNER_LINES[framework]).replace(
        "[checks]\n", '[checks]\nrunner = "junit"\njunit = "junit.xml"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(JS_RUNNERS))}]\n"
    files = {
        "package.json": json.dumps({"name": "m", "version": "1.0.0"}),
        "math.js": MATH_JS,
        "test/math.test.js": spec,
    }
    if framework == "jest":
        files["jest.config.js"] = "module.exports = { testEnvironment: 'node' };\n"
    repo = make_repo(tmp_path / "r", files, text)
    _commit(repo, "Faster sub, focus", {
        "math.js": MATH_JS.replace("a - b", "a * b"),
        "test/math.test.js": spec.replace("it('adds'", "it.only('adds'"),
    })  # fmt: skip
    code, verdict, _ = _check(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "subtracts" in verdict["reason"]
    assert "passed → failed" in verdict["reason"]


# --- point 1: allow_test_edits says it no longer loosens anything --------------------


def test_check_with_allow_test_edits_says_it_no_longer_loosens_anything(tmp_path: Path) -> None:
    repo = _calc_repo(tmp_path, extra=ALLOW)
    weakened = TEST_CALC.replace("assert mul(4, 3) == 12", "assert mul(4, 3)")
    _commit(repo, "mul", {"calc.py": CALC.replace("a * b", "a * b + 1"), "test_calc.py": weakened})
    code, verdict, stderr = _check(repo)
    assert "allow_test_edits no longer loosens anything" in stderr
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "test_calc.py::test_mul" in verdict["reason"]


# --- point 6: the baseline stops what cannot run ---------------------------------------

UNITTEST = f"{sys.executable} -m unittest -v"
TEST_CALC_UNITTEST = (
    "import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)


def _unittest_repo(tmp_path: Path, tests: str, command: str = UNITTEST) -> Path:
    files = {"calc.py": CALC, "test_calc.py": tests}
    return make_repo(tmp_path / "repo", files, directives(command))


@pytest.mark.parametrize("command", [UNITTEST, f"{sys.executable} -m unittest discover -v"])
def test_a_unittest_suite_that_collects_no_test_stops_before_the_model(
    tmp_path: Path, script, command: str
) -> None:
    repo = _unittest_repo(tmp_path, "import unittest\n\nfrom calc import add\n", command)
    _stops(repo, script, "collected no tests (Ran 0 tests", "modules named test*.py")


def test_a_unittest_suite_whose_only_module_fails_to_import_stops_before_the_model(
    tmp_path: Path, script
) -> None:
    repo = _unittest_repo(tmp_path, "import no_such_dependency\n" + TEST_CALC_UNITTEST)
    _stops(repo, script, "every test module fails to import (test_calc.py", "no_such_dependency")


def test_a_unittest_suite_with_a_failing_test_reaches_the_model(tmp_path: Path, script) -> None:
    _reaches_the_model(_unittest_repo(tmp_path, TEST_CALC_UNITTEST), script)


def test_unittest_tests_written_before_their_code_reach_the_model(tmp_path: Path, script) -> None:
    first = TEST_CALC_UNITTEST.replace("from calc import add", "from calc import add, double")
    _reaches_the_model(_unittest_repo(tmp_path, first), script)


@NEEDS_NODE
def test_node_test_with_no_test_file_stops_before_the_model(tmp_path: Path, script) -> None:
    package = json.dumps({"name": "m", "version": "1.0.0", "scripts": {"test": "node --test"}})
    files = {"package.json": package, "math.js": MATH_JS}
    repo = make_repo(tmp_path / "repo", files, directives("node --test"))
    _stops(repo, script, "collected no tests (tests 0)", "*.test.js")


JS_FRAMEWORKS = {  # the package, and the test script that starts it
    "mocha": "mocha --reporter xunit --reporter-option output=junit.xml",
    "vitest": "vitest run --reporter=junit --outputFile=junit.xml",
    "jest": "JEST_JUNIT_OUTPUT_FILE=junit.xml jest --ci --reporters=jest-junit",
}


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
@pytest.mark.parametrize("framework", sorted(JS_FRAMEWORKS))
def test_a_js_framework_without_node_modules_stops_before_the_model(
    tmp_path: Path, script, framework: str
) -> None:
    """package.json names the framework; nobody ran `npm install`: the runner does not
    start, and the fix says so."""
    manifest = {
        "name": "m",
        "version": "1.0.0",
        "scripts": {"test": JS_FRAMEWORKS[framework]},
        "devDependencies": {framework: "*"},
    }
    junit = '[checks]\nrunner = "junit"\njunit = "junit.xml"\n'
    files = {
        "package.json": json.dumps(manifest),
        "math.js": MATH_JS,
        "test/math.test.js": "const { add } = require('../math.js');\n\n"
        "it('adds', () => { if (add(2, 3) !== 5) throw new Error('add'); });\n",
    }
    text = directives("npm test").replace("[checks]\n", junit, 1)
    repo = make_repo(tmp_path / "repo", files, text)
    _stops(
        repo,
        script,
        f"{framework}: not found",
        "is in package.json but not installed",
        "npm install",
    )
