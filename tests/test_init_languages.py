"""`selfforge init` and `doctor` on projects that are not Python: the runner is detected
from the project (go.mod, Cargo.toml, package.json), written into the directives, run
once by doctor in the sandbox, and doctor names the toolchain it found."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from test_runner_cargo import CARGO_TOML, IT, LIB
from test_runner_go import GO_MOD, MATHX, MATHX_TEST
from test_runner_node import MATH, NODE_20, PACKAGE, TESTS

from conftest import CARGO_STARTS, cli, git, make_repo

GO_OK = MATHX.replace("return a - b\n}\n\nfunc Sub", "return a + b\n}\n\nfunc Sub")
RUST_OK = LIB.replace("{\n    a - b\n}\n\npub fn sub", "{\n    a + b\n}\n\npub fn sub")
NODE_OK = MATH.replace("a - b;\nexports.sub", "a + b;\nexports.sub")

CASES = {
    "go": (
        {"go.mod": GO_MOD, "mathx.go": GO_OK, "mathx_test.go": MATHX_TEST},
        "go test ./...",
        "go",
    ),
    "cargo": (
        {"Cargo.toml": CARGO_TOML, "src/lib.rs": RUST_OK, "tests/it.rs": IT},
        "cargo test --offline",
        "cargo",
    ),
    "node": (
        {"package.json": PACKAGE, "math.js": NODE_OK, "test/math.test.js": TESTS},
        "npm test",
        "node",
    ),
}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_init_detects_the_runner_and_doctor_runs_it(tmp_path: Path, lang: str) -> None:
    files, command, program = CASES[lang]
    if shutil.which(program) is None or (lang == "cargo" and not CARGO_STARTS):
        pytest.skip(f"needs {program} that starts")
    if lang == "node" and not NODE_20:
        pytest.skip("needs node 20 or later")
    repo = make_repo(tmp_path / "repo", files)
    cli("init", "--repo", str(repo), check=True)
    written = tomllib.loads((repo / "selfforge.toml").read_text())
    assert written["checks"]["test"] == command
    git(repo, "add", "selfforge.toml")
    git(repo, "commit", "-qm", "directives")
    proc = cli("doctor", "--repo", str(repo), "--model", "script:none.json")
    out = proc.stdout
    assert "toolchain" in out and shutil.which(program) in out, out
    assert "passed" in out and "test check" in out, out  # the probe ran the suite
    assert "virtualenv" in out and "none needed" in out


def _found_before_npm_install(repo: Path) -> dict:
    """The [checks] init found in a Node project whose packages are not installed yet:
    the command did not run (its runner is not there), so init writes it commented out
    and says to run npm install."""
    proc = cli("init", "--repo", str(repo), check=True)
    text = (repo / "selfforge.toml").read_text()
    assert "test" not in tomllib.loads(text)["checks"], text
    assert "node_modules is absent" in proc.stdout and "run `npm install`" in proc.stdout
    keys = ("# test = ", "# runner = ", "# junit = ")
    found = [ln[2:] for ln in text.splitlines() if ln.startswith(keys)]
    return tomllib.loads("\n".join(found))


def test_init_on_a_node_project_with_vitest_writes_a_junit_runner(tmp_path: Path) -> None:
    package = json.dumps({"name": "m", "devDependencies": {"vitest": "^1.0.0"}})
    repo = make_repo(tmp_path / "repo", {"package.json": package, "a.test.js": ""})
    checks = _found_before_npm_install(repo)
    assert checks["runner"] == "junit"
    assert checks["junit"] == ".selfforge-junit.xml"
    assert "--reporter=junit" in checks["test"] and checks["junit"] in checks["test"]
    # Vitest's results cache would go into node_modules, which checks see read-only.
    assert "--no-cache" in checks["test"]


def test_init_on_a_mocha_project_keeps_its_interface_and_files_but_not_bail(
    tmp_path: Path,
) -> None:
    """The project's own mocha arguments (the TDD or QUnit interface, the test folder)
    are kept, its reporter is replaced by JUnit's, and --bail goes: a run that stops at
    the first failure leaves the other tests' outcomes unknown."""
    package = json.dumps(
        {
            "name": "m",
            "scripts": {"test": "mocha --reporter spec --bail --check-leaks --ui qunit test/"},
            "devDependencies": {"mocha": "7.1.1"},
        }
    )
    repo = make_repo(tmp_path / "repo", {"package.json": package, "test/a.js": ""})
    checks = _found_before_npm_install(repo)
    assert checks["runner"] == "junit"
    assert checks["test"] == (
        "npx mocha --check-leaks --ui qunit test/ --reporter xunit "
        "--reporter-options output=.selfforge-junit.xml"
    )
