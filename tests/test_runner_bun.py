"""`bun test`, the runner added as one adapter file (judge/runners/bun.py) and one line
of the registry: the real Bun from npm (installed once, outside the clone, by `.ci/run`
into SELFFORGE_BUN). Through `selfforge check` on a tiny Bun project in a real git
repository: a fix commit is accepted, a regression is rejected by the test's name, and a
change that hides a regression behind a weakened test (`test.skip`, `test.only`,
`test.todo` as bun:test spells them, or the test file deleted) is refused: the base's
version of the test file judges the change's code. `init` finds the runner, a skip mark
in a model's proposal is refused as bun spells it, and the Bun under the home folder is
shown to the sandbox by the adapter alone."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from conftest import check_json, cli, directives, git, log_json, make_repo

BUN_HOME = Path(os.environ.get("SELFFORGE_BUN", Path.home() / ".cache/selfforge-ci/bun"))
BUN = BUN_HOME / "node_modules" / ".bin" / "bun"
pytestmark = pytest.mark.skipif(
    not BUN.exists(), reason=f"needs bun in {BUN_HOME} (npm install bun, as .ci/run does)"
)

MATH = "export const add = (a, b) => a - b;\nexport const sub = (a, b) => a - b;\n"
FIXED = MATH.replace("a - b;\nexport const sub", "a + b;\nexport const sub")
TESTS = """import { describe, expect, test } from "bun:test";
import { add, sub } from "../math.js";

describe("math", () => {
  test("adds", () => {
    expect(add(2, 3)).toBe(5);
  });
  test("subtracts", () => {
    expect(sub(5, 3)).toBe(2);
  });
});
"""
PACKAGE = json.dumps({"name": "m", "type": "module", "scripts": {"test": "bun test"}})
SUBTRACTS = "test/math.test.js::math > subtracts"
SUBTRACTS_TEST = 'test("subtracts", () => {\n    expect(sub(5, 3)).toBe(2);\n  });'


def _repo(tmp_path: Path, math: str = MATH, extra: str = "") -> Path:
    files = {"package.json": PACKAGE, "math.js": math, "test/math.test.js": TESTS}
    return make_repo(tmp_path / "repo", files, directives(f"{BUN} test", extra=extra))


def _commit(repo: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        if text is None:
            (repo / name).unlink()
        else:
            (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Change")


def test_a_fix_commit_is_accepted(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _commit(repo, {"math.js": FIXED})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]


def test_a_regression_is_rejected_naming_the_test(tmp_path: Path) -> None:
    repo = _repo(tmp_path, FIXED)
    _commit(repo, {"math.js": FIXED.replace("(a, b) => a - b", "(a, b) => a * b")})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert SUBTRACTS in verdict["reason"]


@pytest.mark.parametrize(
    "weakened",
    [
        TESTS.replace('test("subtracts"', 'test.skip("subtracts"'),
        TESTS.replace('test("adds"', 'test.only("adds"'),
        TESTS.replace(SUBTRACTS_TEST, 'test.todo("subtracts");'),
        None,  # the test file deleted
    ],
    ids=["skip", "only", "todo", "deleted"],
)
def test_a_weakened_test_cannot_hide_a_regression(tmp_path: Path, weakened: str | None) -> None:
    """The change breaks sub and weakens the test that would catch it: the judged run
    takes the base's test file, which still runs it (a person's change may edit tests;
    the contract is what refuses this one)."""
    repo = _repo(tmp_path, FIXED)
    broken = FIXED.replace("(a, b) => a - b", "(a, b) => a * b")
    _commit(repo, {"math.js": broken, "test/math.test.js": weakened})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert SUBTRACTS in verdict["reason"]


def test_a_forged_report_and_forged_counts_cannot_hide_a_regression(tmp_path: Path) -> None:
    """The change breaks sub, and its code, as the tests exit, prints bun's closing counts
    for an all-pass run and writes an all-pass report where bun writes its own. The exit
    code and bun's counts must agree with the report: rejected. The control: the forged
    report alone, read as the adapter reads it, is all passes."""
    from selfforge.judge.runners.bun import REPORT
    from selfforge.judge.runners.junit import parse_junit

    cases = "".join(
        f'<testcase name="{n}" classname="math" file="test/math.test.js"/>'
        for n in ("adds", "subtracts")
    )
    forged = f"<testsuites><testsuite>{cases}</testsuite></testsuites>"
    attack = (
        'import { writeFileSync } from "node:fs";\n'
        'process.on("exit", () => {\n'
        f"  writeFileSync({json.dumps(REPORT)}, {json.dumps(forged)});\n"
        '  console.log(" 2 pass\\n 0 fail");\n'
        "});\n" + FIXED.replace("(a, b) => a - b", "(a, b) => a * b")
    )
    repo = _repo(tmp_path, FIXED)
    _commit(repo, {"math.js": attack})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    control = parse_junit(forged.encode())
    assert control is not None and set(control.outcomes.values()) == {"passed"}


def test_a_skip_in_a_model_proposal_is_refused_as_bun_spells_it(tmp_path: Path, script) -> None:
    """bun:test's `test.if(...)` runs a test only when its condition holds: the adapter's
    own mark, refused in a model's proposal (here one that also fixes add)."""
    repo = _repo(tmp_path, extra="[safety]\nallow_test_edits = true\n")
    fix = "math.js\n<<<<<<< SEARCH\n" + MATH + "=======\n" + FIXED + ">>>>>>> REPLACE\n"
    weaken = (
        'test/math.test.js\n<<<<<<< SEARCH\n  test("subtracts", () => {\n=======\n'
        '  test.if(false)("subtracts", () => {\n>>>>>>> REPLACE\n'
    )
    task = "Fix add so that the adds test passes"
    cli("run", "--repo", str(repo), "--model", script(propose=[fix + weaken]), "--task", task)
    attempt = log_json(repo)[-1]
    assert attempt["outcome"] == "rejected"
    assert "test.if(false)" in attempt["reason"] and "test/math.test.js" in attempt["reason"]


def test_init_finds_bun_and_a_check_of_what_it_wrote_runs(tmp_path: Path) -> None:
    files = {"package.json": PACKAGE, "math.js": FIXED, "test/math.test.js": TESTS}
    repo = make_repo(tmp_path / "repo", files)
    path = f"{BUN.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    cli("init", "--repo", str(repo), env={"PATH": path}, check=True)
    written = tomllib.loads((repo / "selfforge.toml").read_text())
    assert written["checks"]["test"] == "bun test"
    assert written["checks"].get("runner", "auto") == "auto"  # the command says it


def test_the_adapter_shows_the_bun_under_home_and_nothing_else_of_it(tmp_path: Path) -> None:
    """Run with the home folder that holds the Bun install: the check sees Bun's own
    folders (the adapter's `prepare`), not the home folder around them."""
    from selfforge.judge.runners import registry

    adapter = registry.detect(f"{BUN} test", tmp_path)
    assert adapter.name == "bun" and adapter.trust_note  # a report file, like JUnit's
    shown = adapter.prepare(f"{BUN} test", None, "/tmp/x").readable
    home = Path.home().resolve()
    if home not in BUN.resolve().parents:
        pytest.skip("this Bun is outside the home folder: nothing of home to show")
    assert shown and all(home in p.resolve().parents for p in shown), shown
    assert all(p.resolve() not in (home, BUN_HOME.resolve()) for p in shown), shown
