"""Mocha, Vitest and Jest, the real ones (installed from npm once, outside the clone, by
`.ci/run` into SELFFORGE_JS_RUNNERS): each writes JUnit XML that `runner = "junit"`
reads; a fix lands, a regression is rejected by name, and `.only` is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import cli, directives, journal_test_runs, log_json, make_repo

RUNNERS = Path(
    os.environ.get("SELFFORGE_JS_RUNNERS", Path.home() / ".cache/selfforge-ci/js-runners")
)
BIN = RUNNERS / "node_modules" / ".bin"
pytestmark = pytest.mark.skipif(
    not (BIN / "mocha").exists(), reason=f"needs mocha, vitest and jest in {RUNNERS}"
)

MATH = "exports.add = (a, b) => a - b;\nexports.sub = (a, b) => a - b;\n"
SPEC = """const {{ add, sub }} = require('../math.js');
{imports}
describe('math', () => {{
  it('adds', () => {{ {expect_add}; }});
  it('subtracts', () => {{ {expect_sub}; }});
}});
"""
NODE_ASSERT = {
    "imports": "const assert = require('node:assert');",
    "expect_add": "assert.strictEqual(add(2, 3), 5)",
    "expect_sub": "assert.strictEqual(sub(5, 3), 2)",
}
EXPECT = {
    "imports": "",
    "expect_add": "expect(add(2, 3)).toBe(5)",
    "expect_sub": "expect(sub(5, 3)).toBe(2)",
}
OUT = "junit.xml"
FRAMEWORKS = {
    "mocha": (f"{BIN}/mocha --reporter xunit --reporter-option output={OUT}", NODE_ASSERT, {}),
    "vitest": (f"{BIN}/vitest run --globals --reporter=junit --outputFile={OUT}", EXPECT, {}),
    "jest": (
        f"JEST_JUNIT_OUTPUT_FILE={OUT} {BIN}/jest --ci --reporters="
        f"{RUNNERS}/node_modules/jest-junit",
        EXPECT,
        {"jest.config.js": "module.exports = { testEnvironment: 'node' };\n"},
    ),
}
FIX = (
    "math.js\n<<<<<<< SEARCH\nexports.add = (a, b) => a - b;\n=======\n"
    "exports.add = (a, b) => a + b;\n>>>>>>> REPLACE\n"
)
BREAK_SUB = FIX + (
    "math.js\n<<<<<<< SEARCH\nexports.sub = (a, b) => a - b;\n=======\n"
    "exports.sub = (a, b) => a * b;\n>>>>>>> REPLACE\n"
)
TASK = "Fix add so that the adds test passes"


def _repo(tmp_path: Path, framework: str) -> Path:
    command, spec, extra_files = FRAMEWORKS[framework]
    text = directives(command).replace(
        "[checks]\n", f'[checks]\nrunner = "junit"\njunit = "{OUT}"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(RUNNERS))}]\n"
    text += "\n[safety]\nallow_test_edits = true\n"
    files = {
        "package.json": json.dumps({"name": "m", "version": "1.0.0"}),
        "math.js": MATH,
        "test/math.test.js": SPEC.format(**spec),
        **extra_files,
    }
    return make_repo(tmp_path / "repo", files, text)


def _run(repo: Path, spec: str) -> str:
    proc = cli("run", "--repo", str(repo), "--model", spec, "--task", TASK, "--json")
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_fix_lands_and_a_regression_is_rejected(tmp_path: Path, script, framework) -> None:
    repo = _repo(tmp_path, framework)
    out = _run(repo, script(propose=[BREAK_SUB]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected", out
    assert "subtracts" in attempt["reason"]
    out = _run(repo, script(propose=[FIX]))
    assert log_json(repo)[-1]["outcome"] == "accepted", out
    # A report file the tests could write themselves: every run says so.
    assert "a report file the code under test could also write" in out


def test_a_forged_report_with_a_failing_exit_code_is_rejected(tmp_path: Path, script) -> None:
    """add stays broken; the code overwrites the JUnit report with passes when the
    process exits. The runner's exit code still says a test failed: the results and the
    exit code disagree."""
    forged = (
        '<testsuites><testsuite><testcase classname="math" name="adds" file="test/math.test.js"/>'
        '<testcase classname="math" name="subtracts" file="test/math.test.js"/></testsuite>'
        "</testsuites>"
    )
    forge = (
        "math.js\n<<<<<<< SEARCH\nexports.add = (a, b) => a - b;\n=======\n"
        "exports.add = (a, b) => a - b;\nprocess.on('exit', () => require('fs')"
        f".writeFileSync('{OUT}', {json.dumps(forged)}));\n>>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path, "mocha")
    _run(repo, script(propose=[forge]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "the exit code and the results disagree" in attempt["reason"]
    assert "a - b;" in (repo / "math.js").read_text()


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_focused_test_is_refused(tmp_path: Path, script, framework) -> None:
    line = next(ln for ln in SPEC.format(**FRAMEWORKS[framework][1]).splitlines() if "'adds'" in ln)
    only = (
        f"test/math.test.js\n<<<<<<< SEARCH\n{line}\n=======\n"
        f"{line.replace('it(', 'it.only(')}\n>>>>>>> REPLACE\n"
    )
    repo = _repo(tmp_path, framework)
    _run(repo, script(propose=[FIX + only]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "it.only('adds'" in attempt["reason"]


# Leaves add broken, and adds a test file that sorts first and repairs it in the test
# process (Mocha loads every file into one process; Vitest and Jest isolate files).
REPAIR_FIRST = (
    "test/0-setup.test.js\n<<<<<<< SEARCH\n=======\n"
    "const math = require('../math.js');\nmath.add = (a, b) => a + b;\n"
    "describe('setup', () => {\n  it('is ready', () => {});\n});\n>>>>>>> REPLACE\n"
)

TESTED = (
    "test/more.test.js\n<<<<<<< SEARCH\n=======\n"
    "const math = require('../math.js');\n"
    "describe('more', () => {\n  it('adds two and two', () => {\n"
    "    if (math.add(2, 2) !== 4) throw new Error('add(2, 2) is not 4');\n  });\n});\n"
    ">>>>>>> REPLACE\n"
)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_new_test_file_cannot_repair_the_code_for_the_tests_after_it(
    tmp_path: Path, script, framework
) -> None:
    """The suite that judges the code runs without the candidate's new test files; they
    run after, with the suite, and must pass themselves."""
    repo = _repo(tmp_path, framework)
    out = _run(repo, script(propose=[REPAIR_FIRST]))
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected", out
    assert "adds" in attempt["reason"], attempt["reason"]
    # A fix with a new test file of its own lands: its test ran in the second run, and
    # failed on the base's code (it can fail: judge/new_tests.py; the repairing file's
    # empty test cannot, and would be refused).
    out = _run(repo, script(propose=[FIX + TESTED]))
    assert log_json(repo)[-1]["outcome"] == "accepted", out
    runs = [name for name, _ in journal_test_runs(repo)]
    assert runs[-4:] == ["tests", "tests:new", "tests:new-on-base", "tests:can-fail"], runs
