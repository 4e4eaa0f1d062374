"""The test contract on whole commits, as teams gate them (`selfforge check`, code and
tests together): the base's tests, in their base version and with the base's test
infrastructure, judge the change's code; a test added in place lands; a weakened,
skipped or deleted test that hid a regression never does, whatever the directives say;
what needs a person is "needs review" (exit 3), not a rejection."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, check_json, directives, git, log_json, make_repo, needs_cargo

FIXED = CALC.replace("return a - b", "return a + b", 1)
BROKEN_MUL = FIXED.replace("a * b", "a + b")
ALLOW = "[safety]\nallow_test_edits = true\n"


def _repo(tmp_path: Path, files: dict[str, str] | None = None, extra: str = "") -> Path:
    files = files or {"calc.py": CALC, "test_calc.py": TEST_CALC}
    return make_repo(tmp_path / "r", files, directives(extra=extra))


def _commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


# --- what lands by default ------------------------------------------------------------


def test_a_test_method_added_to_an_existing_test_file_lands(tmp_path: Path) -> None:
    repo = _repo(tmp_path, extra="")
    _commit(repo, "Fix add(), test it more", {
        "calc.py": FIXED,
        "test_calc.py": TEST_CALC + "\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n",
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    names = [s["name"] for s in verdict["steps"]]
    assert "tests:new" in names  # the change's own suite ran too, its new test in


def test_a_renamed_fixture_and_annotated_tests_land(tmp_path: Path) -> None:
    conftest = "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n"
    tests = "from calc import add\n\n\ndef test_add_two(two):\n    assert add(two, 3) == 5\n"
    repo = _repo(tmp_path, {"calc.py": FIXED, "conftest.py": conftest, "test_calc.py": tests})
    _commit(repo, "Rename the fixture; annotate", {
        "conftest.py": conftest.replace("def two", "def number_two"),
        "test_calc.py": tests.replace("(two)", "(number_two: int) -> None").replace(
            "add(two", "add(number_two"
        ),
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]


def test_a_new_test_file_with_a_platform_skip_lands(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    new = (
        "import sys\n\nimport pytest\n\nfrom calc import add\n\n\n"
        "@pytest.mark.skipif(sys.platform == 'win32', reason='posix only')\n"
        "def test_add_big():\n    assert add(10, 20) == 30\n\n\n"
        "@pytest.mark.skipif(True, reason='speedups missing')\n"
        "def test_speedups():\n    assert False\n"
    )
    _commit(repo, "Fix add(); new tests", {"calc.py": FIXED, "tests/test_more.py": new})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]


# --- weakened tests never land, whatever the directives say --------------------------


def _refused(repo: Path, changes: dict[str, str | None], name: str) -> dict:
    """Commit ``changes`` (a planted bug and the test that would catch it, weakened) and
    check it: rejected, naming the test."""
    _commit(repo, "Tweak", changes)
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert name in verdict["reason"]
    return verdict


ENCODE = "def encode(s):\n    return s.encode('ascii').hex()\n"
TEST_ENCODE = (
    "from enc import encode\n\n\ndef test_encode():\n"
    "    enc, expect = encode('abcd'), '61626364'\n    assert enc == expect\n"
)
VALID = (
    "import unittest\n\n\ndef valid(x):\n    return x > 0\n"
)  # fmt: skip
TEST_VALID = (
    "import unittest\n\nfrom valid import valid\n\n\nclass T(unittest.TestCase):\n"
    "    def test_valid(self):\n        self.assertTrue(valid(3))\n"
)


@pytest.mark.parametrize("extra", ["", ALLOW], ids=["default", "allow_test_edits"])
def test_a_planted_bug_behind_a_weakened_pytest_assertion_is_refused(
    tmp_path: Path, extra: str
) -> None:
    repo = _repo(tmp_path, {"enc.py": ENCODE, "test_enc.py": TEST_ENCODE}, extra=extra)
    _commit(repo, "Faster encode", {
        "enc.py": ENCODE.replace(".hex()", ".hex()[::-1]"),
        "test_enc.py": TEST_ENCODE.replace("enc == expect", "enc == expect or len(enc) == 8"),
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected")
    # the base test's own failure message
    assert "test_enc.py::test_encode: passed → failed" in verdict["reason"]
    assert "46362616" in verdict["reason"] or "assert" in verdict["reason"]


@pytest.mark.parametrize("extra", ["", ALLOW], ids=["default", "allow_test_edits"])
def test_a_planted_bug_behind_a_weakened_unittest_assertion_is_refused(
    tmp_path: Path, extra: str
) -> None:
    files = {"valid.py": VALID, "test_valid.py": TEST_VALID}
    repo = make_repo(
        tmp_path / "r", files, directives(f"{sys.executable} -m unittest -v", extra=extra)
    )
    _commit(repo, "Stricter valid()", {
        "valid.py": VALID.replace("x > 0", "x > 5"),
        "test_valid.py": TEST_VALID.replace("assertTrue(valid(3))", "assertIsNotNone(3)"),
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "test_valid" in verdict["reason"]


GO_MOD = "module example.com/v\n\ngo 1.19\n"
GO_CODE = "package v\n\nfunc Newer(a, b int) bool {\n\treturn a > b\n}\n"
GO_TEST = (
    'package v\n\nimport "testing"\n\nfunc TestNewer(t *testing.T) {\n'
    '\tif !Newer(2, 1) {\n\t\tt.Fatalf("2 should be newer than 1")\n\t}\n}\n'
)


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
@pytest.mark.parametrize("extra", ["", ALLOW], ids=["default", "allow_test_edits"])
def test_a_planted_bug_behind_a_go_fatalf_turned_logf_is_refused(
    tmp_path: Path, extra: str
) -> None:
    files = {"go.mod": GO_MOD, "v.go": GO_CODE, "v_test.go": GO_TEST}
    repo = make_repo(tmp_path / "r", files, directives("go test ./...", extra=extra))
    verdict = _refused(repo, {
        "v.go": GO_CODE.replace("a > b", "a < b"),
        "v_test.go": GO_TEST.replace("t.Fatalf", "t.Logf"),
    }, "TestNewer")  # fmt: skip
    assert "2 should be newer than 1" in verdict["reason"]


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
def test_go_toolchain_line_is_no_dependency_change_but_a_require_needs_review(
    tmp_path: Path,
) -> None:
    files = {"go.mod": GO_MOD, "v.go": GO_CODE, "v_test.go": GO_TEST}
    repo = make_repo(tmp_path / "r", files, directives("go test ./..."))
    _commit(repo, "Go 1.20", {"go.mod": GO_MOD.replace("go 1.19", "go 1.20  // newer")})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    _commit(repo, "A dependency", {"go.mod": GO_MOD + "\nrequire example.com/dep v1.0.0\n"})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert any("go.mod" in item for item in verdict["review"])


CARGO = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
RUST_LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }
}
"""


@needs_cargo
def test_a_planted_bug_behind_a_weakened_inline_rust_test_is_refused(tmp_path: Path) -> None:
    files = {"Cargo.toml": CARGO, "src/lib.rs": RUST_LIB}
    repo = make_repo(tmp_path / "r", files, directives("cargo test --offline", extra=ALLOW))
    _refused(repo, {
        "src/lib.rs": RUST_LIB.replace("    a + b", "    a * b").replace(
            "assert_eq!(add(2, 3), 5)", "assert!(add(2, 3) > 0)"
        ),
    }, "adds")  # fmt: skip


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_planted_bug_behind_a_weakened_node_test_is_refused(tmp_path: Path) -> None:
    code_js = "exports.add = (a, b) => a + b;\n"
    test_js = (
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { add } = require('../math.js');\n\n"
        "test('adds', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n"
    )
    package = json.dumps({"name": "m", "version": "1.0.0", "scripts": {"test": "node --test"}})
    files = {"package.json": package, "math.js": code_js, "test/math.test.js": test_js}
    repo = make_repo(tmp_path / "r", files, directives("node --test", extra=ALLOW))
    _refused(repo, {
        "math.js": code_js.replace("a + b", "a * b"),
        "test/math.test.js": test_js.replace("strictEqual(add(2, 3), 5)", "ok(add(2, 3))"),
    }, "adds")  # fmt: skip


def test_a_deleted_test_that_hid_a_regression_is_refused_with_its_message(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    without_mul = TEST_CALC[: TEST_CALC.index("def test_mul")].rstrip() + "\n"
    _commit(repo, "Fix add(); mul is simpler", {
        "calc.py": BROKEN_MUL, "test_calc.py": without_mul,
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected")
    assert "test_calc.py::test_mul: passed → failed" in verdict["reason"]


def test_a_failing_test_skipped_by_the_change_is_no_fix(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    skipped = TEST_CALC.replace(
        "def test_add", "import pytest\n\n\n@pytest.mark.skip(reason='later')\ndef test_add"
    )
    _commit(repo, "Skip the add test", {"test_calc.py": skipped})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected")
    assert "changed, not fixed: test_calc.py::test_add" in verdict["reason"]
    assert "the change's is skipped" in verdict["reason"]


def test_a_new_test_that_fails_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    new = "from calc import add\n\n\ndef test_add_more():\n    assert add(1, 1) == 3\n"
    _commit(repo, "Fix add(); a wrong test", {"calc.py": FIXED, "test_more.py": new})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected")
    assert "test_more.py::test_add_more" in verdict["reason"]


def test_new_infrastructure_cannot_fake_what_the_base_tests_judge(tmp_path: Path) -> None:
    forced = (
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    )
    repo = _repo(tmp_path)
    _commit(repo, "Break mul, add a conftest", {"calc.py": BROKEN_MUL, "conftest.py": forced})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected")
    assert "test_calc.py::test_mul" in verdict["reason"]


# --- needs review --------------------------------------------------------------------


def test_a_declared_behaviour_change_needs_review_naming_the_tests(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sub_is_reversed = TEST_CALC.replace("sub(5, 3) == 2", "sub(5, 3) == -2")
    new_calc = CALC.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return b - a")
    _commit(repo, "sub() now counts down", {"calc.py": new_calc, "test_calc.py": sub_is_reversed})
    code, verdict = check_json(repo)  # undeclared: the rewritten expectation says it
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert "`assert sub(5, 3) == 2` → `assert sub(5, 3) == -2`" in verdict["review"][0]
    code, verdict = check_json(repo, "--changes", "test_calc.py::test_sub")
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert any("test_calc.py::test_sub: rewrote" in item for item in verdict["review"])
    assert log_json(repo)[-1]["outcome"] == "needs_review"


def test_a_commit_trailer_declares_the_change_too(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    new_calc = CALC.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return b - a")
    tests = TEST_CALC.replace("sub(5, 3) == 2", "sub(5, 3) == -2")
    message = "sub() counts down\n\nSelfforge-Changes: test_sub"
    _commit(repo, message, {"calc.py": new_calc, "test_calc.py": tests})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]


def test_a_protected_path_needs_review_and_a_broken_one_is_still_rejected(tmp_path: Path) -> None:
    repo = _repo(tmp_path, extra='[safety]\nprotected = [".github/**"]\n')
    _commit(repo, "CI tweak", {".github/workflows/ci.yml": "on: push\n", "calc.py": FIXED})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert ".github/workflows/ci.yml" in verdict["review"][0]
    _commit(repo, "CI tweak and a regression", {"calc.py": BROKEN_MUL})
    code, verdict = check_json(repo, "HEAD~1..HEAD")
    assert (code, verdict["verdict"]) == (1, "rejected")  # a regression is no review matter


def test_run_still_refuses_what_check_sends_to_review(tmp_path: Path, script) -> None:
    from conftest import cli

    repo = _repo(tmp_path, extra='[safety]\nprotected = [".github/**"]\n')
    reply = ".github/ci.yml\n<<<<<<< SEARCH\n=======\non: push\n>>>>>>> REPLACE\n"
    cli("run", "--repo", str(repo), "--model", script(propose=[reply]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected" and ".github/ci.yml" in attempt["reason"]


def test_run_lands_a_test_a_model_adds_to_an_existing_file(tmp_path: Path, script) -> None:
    from conftest import cli

    repo = _repo(tmp_path)
    reply = (
        "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\n"
        "def add(a, b):\n    return a + b\n>>>>>>> REPLACE\n"
        "\ntest_calc.py\n<<<<<<< SEARCH\ndef test_sub():\n=======\n"
        "def test_add_zero():\n    assert add(0, 0) == 0\n\n\ndef test_sub():\n>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[reply]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt["reason"]
    assert "test_add_zero" in (repo / "test_calc.py").read_text()


def test_the_mcp_check_tool_says_needs_review_with_exit_code_3(tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp")
    import anyio
    from mcp.client.stdio import stdio_client

    from test_mcp_server import _json

    repo = _repo(tmp_path)
    new_calc = CALC.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return b - a")
    _commit(repo, "sub() counts down", {
        "calc.py": new_calc, "test_calc.py": TEST_CALC.replace("== 2", "== -2"),
    })  # fmt: skip

    async def call() -> tuple[dict, dict]:
        params = mcp.StdioServerParameters(
            command=sys.executable, args=["-m", "selfforge", "mcp", "--repo", str(repo)],
            env={**os.environ},
        )  # fmt: skip
        async with stdio_client(params) as (read, write), mcp.ClientSession(read, write) as s:
            await s.initialize()
            plain = await s.call_tool("check", {"change": "HEAD"})
            declared = await s.call_tool("check", {"change": "HEAD", "changes": ["test_sub"]})
            return _json(plain), _json(declared)

    plain, declared = anyio.run(call)
    # undeclared, the rewritten expectation makes it a question for a person too
    assert (plain["verdict"], plain["exit_code"]) == ("needs_review", 3)
    assert "changes tested behaviour" in plain["review"][0]
    assert (declared["verdict"], declared["exit_code"]) == ("needs_review", 3)
    assert any("test_calc.py::test_sub: rewrote" in item for item in declared["review"])


@needs_cargo
def test_a_planted_bug_behind_a_weakened_rust_integration_test_is_refused(tmp_path: Path) -> None:
    lib = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    it = "#[test]\nfn adds() {\n    assert_eq!(adder::add(2, 3), 5);\n}\n"
    files = {"Cargo.toml": CARGO, "src/lib.rs": lib, "tests/it.rs": it}
    repo = make_repo(tmp_path / "r", files, directives("cargo test --offline", extra=ALLOW))
    _refused(repo, {
        "src/lib.rs": lib.replace("a + b", "a * b"),
        "tests/it.rs": it.replace("assert_eq!(adder::add(2, 3), 5)", "let _ = adder::add(2, 3)"),
    }, "adds")  # fmt: skip


JS_RUNNERS = Path(
    os.environ.get("SELFFORGE_JS_RUNNERS", Path.home() / ".cache/selfforge-ci/js-runners")
)
JS_BIN = JS_RUNNERS / "node_modules" / ".bin"
JS_FRAMEWORKS = {
    "mocha": f"{JS_BIN}/mocha --reporter xunit --reporter-option output=junit.xml",
    "vitest": f"{JS_BIN}/vitest run --globals --reporter=junit --outputFile=junit.xml",
    "jest": f"JEST_JUNIT_OUTPUT_FILE=junit.xml {JS_BIN}/jest --ci "
    f"--reporters={JS_RUNNERS}/node_modules/jest-junit",
}


@pytest.mark.skipif(not (JS_BIN / "jest").exists(), reason=f"needs the JS runners in {JS_RUNNERS}")
@pytest.mark.parametrize("framework", sorted(JS_FRAMEWORKS))
def test_a_planted_bug_behind_a_weakened_js_framework_test_is_refused(
    tmp_path: Path, framework: str
) -> None:
    assertion = (
        "require('node:assert').strictEqual(add(2, 3), 5)"
        if framework == "mocha"
        else "expect(add(2, 3)).toBe(5)"
    )
    spec = f"const {{ add }} = require('../math.js');\n\nit('adds', () => {{ {assertion}; }});\n"
    text = directives(JS_FRAMEWORKS[framework], extra=ALLOW).replace(
        "[checks]\n", '[checks]\nrunner = "junit"\njunit = "junit.xml"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(JS_RUNNERS))}]\n"
    files = {
        "package.json": json.dumps({"name": "m", "version": "1.0.0"}),
        "math.js": "exports.add = (a, b) => a + b;\n",
        "test/math.test.js": spec,
    }
    if framework == "jest":
        files["jest.config.js"] = "module.exports = { testEnvironment: 'node' };\n"
    repo = make_repo(tmp_path / "r", files, text)
    _refused(repo, {
        "math.js": "exports.add = (a, b) => a * b;\n",
        "test/math.test.js": spec.replace(assertion, "add(2, 3)"),
    }, "adds")  # fmt: skip


def test_a_failing_test_skipped_by_the_change_s_code_is_no_fix(tmp_path: Path) -> None:
    tests = "import pytest\n\nimport calc\n\n\n" + TEST_CALC.replace(
        "def test_add", "@pytest.mark.skipif(calc.LATER, reason='later')\ndef test_add"
    )
    repo = _repo(tmp_path, {"calc.py": CALC + "\nLATER = False\n", "test_calc.py": tests})
    _commit(repo, "Not now", {"calc.py": CALC + "\nLATER = True\n"})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert (
        "skipped by the change, not fixed: test_calc.py::test_add: failed → skipped"
        in (verdict["reason"])
    )


@needs_cargo
def test_a_rust_test_module_in_its_own_file_lands_with_its_declaration(tmp_path: Path) -> None:
    lib = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n"
    it = "#[test]\nfn runs() {\n    let _ = adder::add(1, 1);\n}\n"
    files = {"Cargo.toml": CARGO, "src/lib.rs": lib, "tests/it.rs": it}
    repo = make_repo(tmp_path / "r", files, directives("cargo test --offline"))
    tests = "use super::*;\n\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n"
    _commit(repo, "Fix add, with tests", {
        "src/lib.rs": lib.replace("a - b", "a + b") + "\n#[cfg(test)]\nmod tests;\n",
        "src/tests.rs": tests,
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]


@needs_cargo
def test_a_cargo_version_bump_lands_and_a_profile_needs_review(tmp_path: Path) -> None:
    lib = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    it = "#[test]\nfn adds() {\n    assert_eq!(adder::add(2, 3), 5);\n}\n"
    files = {"Cargo.toml": CARGO, "src/lib.rs": lib, "tests/it.rs": it}
    repo = make_repo(tmp_path / "r", files, directives("cargo test --offline"))
    _commit(repo, "Release 0.2.0", {"Cargo.toml": CARGO.replace("0.1.0", "0.2.0")})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]
    _commit(repo, "Faster tests", {"Cargo.toml": CARGO + "\n[profile.test]\nopt-level = 1\n"})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert "profile" in verdict["review"][0]


def test_a_declared_change_in_a_green_suite_needs_review(tmp_path: Path) -> None:
    """On a base whose suite passes, the declared test's failure in its base version is
    what makes the command exit 1: no unexplained exit code (found by the gate bench on
    google/uuid a2b2b32, whose monotonic v7 rewrote TestVersion7FromReader)."""
    repo = _repo(tmp_path, {"calc.py": FIXED, "test_calc.py": TEST_CALC})
    new_calc = FIXED.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return b - a")
    tests = TEST_CALC.replace("sub(5, 3) == 2", "sub(5, 3) == -2")
    _commit(repo, "sub() counts down", {"calc.py": new_calc, "test_calc.py": tests})
    code, verdict = check_json(repo, "--changes", "test_sub")
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert any("test_calc.py::test_sub" in item for item in verdict["review"])


@pytest.mark.skipif(not (JS_BIN / "vitest").exists(), reason=f"needs vitest in {JS_RUNNERS}")
def test_a_rewritten_vitest_table_test_needs_review(tmp_path: Path) -> None:
    """`it.each(cases)("parses %s", ...)`: Vitest names each run by the title with the
    case in place of `%s`; the judge looked for that name in the source, found no test,
    and rejected a commit that changes parse()'s result and rewrites the table's
    expectation (jshttp/content-type 181e947) as a regression."""
    spec = (
        "const { parse } = require('../parse.js');\n\n"
        "describe('parse', () => {\n"
        "  it.each(['a', 'bc'])('parses %s', (s) => {\n"
        "    expect(parse(s)).toEqual({ type: s });\n"
        "  });\n"
        "});\n"
    )
    text = directives(JS_FRAMEWORKS["vitest"]).replace(
        "[checks]\n", '[checks]\nrunner = "junit"\njunit = "junit.xml"\n', 1
    )
    text += f"\n[sandbox]\nreadable = [{json.dumps(str(JS_RUNNERS))}]\n"
    files = {
        "package.json": json.dumps({"name": "p", "version": "1.0.0"}),
        "parse.js": "exports.parse = (s) => ({ type: s });\n",
        "test/parse.test.js": spec,
        ".gitignore": "junit.xml\n",
    }
    repo = make_repo(tmp_path / "r", files, text)
    _commit(repo, "parse() says where it stopped", {
        "parse.js": "exports.parse = (s) => ({ type: s, index: s.length });\n",
        "test/parse.test.js": spec.replace("{ type: s }", "{ type: s, index: s.length }"),
    })  # fmt: skip
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    review = " ".join(verdict["review"])
    assert "changes tested behaviour" in review and "parse > parses bc" in review, review
