"""Only real dependency changes need a person (#33.2): `selfforge check` of a commit that
changes what the sandbox cannot install offline — a go.mod `require`, a lockfile, a
Cargo or package.json dependency table, pyproject's or a requirements file's pins — exits
3 (needs review) naming the file; the `go` or `toolchain` line, a comment, a description,
scripts or a version bump is no dependency change and lands (exit 0).

Every repository here is a tiny Python project whose pytest suite passes: the test
runner is chosen by the test command, and the dependency rule reads the files, so a
go.mod or a package.json beside it is judged the same as in a project of that language.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, FIX_ADD, TEST_CALC, cli, directives, git, log_json, make_repo

FIXED = CALC.replace("return a - b", "return a + b", 1)

GO_MOD = "module example.com/calc\n\ngo 1.21\n"
GO_MOD_BLOCK = GO_MOD + "\nrequire (\n\texample.com/dep v1.0.0 // pinned\n)\n"
GO_SUM = "example.com/dep v1.0.0 h1:aaaa=\nexample.com/dep v1.0.0/go.mod h1:bbbb=\n"
CARGO = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
CARGO_LOCK = 'version = 3\n\n[[package]]\nname = "adder"\nversion = "0.1.0"\n'
PACKAGE = {"name": "calc", "version": "1.0.0", "description": "adds", "scripts": {"t": "x"}}
NPM_LOCK = {"name": "calc", "lockfileVersion": 3, "packages": {"": {"name": "calc"}}}
PYPROJECT = '[project]\nname = "calc"\nversion = "0.1"\ndependencies = []\n'
REQUIREMENTS = "# what calc needs\nattrs==23.1.0\n"


def _package(**changes: object) -> str:
    return json.dumps({**PACKAGE, **changes}, indent=2) + "\n"


def _lock(version: str) -> str:
    data = {**NPM_LOCK, "packages": {**NPM_LOCK["packages"], "node_modules/left-pad": {
        "version": version,
    }}}  # fmt: skip
    return json.dumps(data, indent=2) + "\n"


# (base files, the commit's files, the file a person must look at, or None: it lands)
REVIEW = [
    pytest.param({"go.mod": GO_MOD}, {"go.mod": GO_MOD + "\nrequire example.com/dep v1.0.0\n"},
                 "go.mod", id="go.mod-require-line"),
    pytest.param({"go.mod": GO_MOD_BLOCK}, {"go.mod": GO_MOD_BLOCK.replace("v1.0.0", "v1.1.0")},
                 "go.mod", id="go.mod-require-block-bump"),
    pytest.param({"go.mod": GO_MOD, "go.sum": GO_SUM},
                 {"go.sum": GO_SUM.replace("aaaa", "cccc")}, "go.sum", id="go.sum"),
    pytest.param({"Cargo.toml": CARGO}, {"Cargo.toml": CARGO + 'serde = "1"\n'},
                 "Cargo.toml", id="cargo-dependencies-added"),
    pytest.param({"Cargo.toml": CARGO},
                 {"Cargo.toml": CARGO + '\n[dev-dependencies]\nproptest = "1"\n'},
                 "Cargo.toml", id="cargo-dev-dependencies"),
    pytest.param({"Cargo.toml": CARGO},
                 {"Cargo.toml": CARGO + '\n[build-dependencies]\ncc = "1"\n'},
                 "Cargo.toml", id="cargo-build-dependencies"),
    pytest.param({"Cargo.toml": CARGO},
                 {"Cargo.toml": CARGO + "\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n"},
                 "Cargo.toml", id="cargo-target-dependencies"),
    pytest.param({"Cargo.toml": CARGO, "Cargo.lock": CARGO_LOCK},
                 {"Cargo.lock": CARGO_LOCK + '\n[[package]]\nname = "serde"\nversion = "1.0.0"\n'},
                 "Cargo.lock", id="cargo-lock"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(dependencies={"left-pad": "^1.3.0"})},
                 "package.json", id="package.json-dependencies"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(devDependencies={"mocha": "^10.0.0"})},
                 "package.json", id="package.json-devDependencies"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(peerDependencies={"react": ">=18"})},
                 "package.json", id="package.json-peerDependencies"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(optionalDependencies={"fsevents": "^2.3.0"})},
                 "package.json", id="package.json-optionalDependencies"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(overrides={"semver": "7.5.2"})},
                 "package.json", id="package.json-overrides"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(resolutions={"semver": "7.5.2"})},
                 "package.json", id="package.json-resolutions"),
    pytest.param({"web/package.json": _package(), "web/package-lock.json": _lock("1.3.0")},
                 {"web/package-lock.json": _lock("1.3.1")},
                 "web/package-lock.json", id="package-lock.json-nested"),
    pytest.param({"package.json": _package()}, {"yarn.lock": "left-pad@^1.3.0:\n  version 1.3.0\n"},
                 "yarn.lock", id="yarn.lock"),
    pytest.param({"package.json": _package()},
                 {"pnpm-lock.yaml": "lockfileVersion: '9.0'\n"}, "pnpm-lock.yaml", id="pnpm-lock"),
    pytest.param({"pyproject.toml": PYPROJECT},
                 {"pyproject.toml": PYPROJECT.replace("[]", '["attrs>=23"]')},
                 "pyproject.toml", id="pyproject-dependencies"),
    pytest.param({"pyproject.toml": PYPROJECT},
                 {"pyproject.toml": PYPROJECT + '[project.optional-dependencies]\nx = ["ujson"]\n'},
                 "pyproject.toml", id="pyproject-optional-dependencies"),
    pytest.param({"pyproject.toml": PYPROJECT},
                 {"pyproject.toml": PYPROJECT + '\n[dependency-groups]\ndev = ["pytest"]\n'},
                 "pyproject.toml", id="pyproject-dependency-groups"),
    pytest.param({"requirements.txt": REQUIREMENTS},
                 {"requirements.txt": REQUIREMENTS.replace("23.1.0", "23.2.0")},
                 "requirements.txt", id="requirements.txt-pin"),
    pytest.param({"calc.py": FIXED}, {"requirements-dev.txt": "pytest-cov==5.0.0\n"},
                 "requirements-dev.txt", id="requirements-dev.txt-added"),
    pytest.param({"pyproject.toml": PYPROJECT}, {"uv.lock": "version = 1\n"}, "uv.lock",
                 id="uv.lock"),
    pytest.param({"pyproject.toml": PYPROJECT}, {"poetry.lock": "[metadata]\n"}, "poetry.lock",
                 id="poetry.lock"),
]  # fmt: skip

LANDS = [
    pytest.param({"go.mod": GO_MOD}, {"go.mod": GO_MOD + "\ntoolchain go1.21.5\n"},
                 id="go.mod-toolchain-line"),
    pytest.param({"go.mod": GO_MOD}, {"go.mod": GO_MOD.replace("go 1.21", "go 1.22")},
                 id="go.mod-go-line"),
    pytest.param({"go.mod": GO_MOD_BLOCK},
                 {"go.mod": "// calc adds numbers\n" + GO_MOD_BLOCK.replace("pinned", "see #12")},
                 id="go.mod-comments"),
    pytest.param({"Cargo.toml": CARGO}, {"Cargo.toml": CARGO.replace("0.1.0", "0.2.0")},
                 id="cargo-version-bump"),
    pytest.param({"package.json": _package()}, {"package.json": _package(description="sums")},
                 id="package.json-description"),
    pytest.param({"package.json": _package()},
                 {"package.json": _package(scripts={"t": "y"}, version="1.1.0")},
                 id="package.json-scripts-and-version"),
    pytest.param({"pyproject.toml": PYPROJECT},
                 {"pyproject.toml": PYPROJECT.replace('"0.1"', '"0.2"') + 'description = "adds"\n'},
                 id="pyproject-version-and-description"),
    pytest.param({"requirements.txt": REQUIREMENTS},
                 {"requirements.txt": "# pinned for calc\n\nattrs==23.1.0  # the one we test\n"},
                 id="requirements.txt-comments"),
]  # fmt: skip


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    suite = {"calc.py": FIXED, "test_calc.py": TEST_CALC}
    return make_repo(tmp_path / "r", {**suite, **files}, directives())


def _commit(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Update the project files")


def _check(repo: Path) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "HEAD", "--repo", str(repo), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize(("base", "change", "path"), REVIEW)
def test_a_real_dependency_change_needs_review_naming_the_file(
    tmp_path: Path, base: dict[str, str], change: dict[str, str], path: str
) -> None:
    repo = _repo(tmp_path, base)
    _commit(repo, change)
    code, verdict = _check(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert any(f"changes {path}, a dependency change" in item for item in verdict["review"])


@pytest.mark.parametrize(("base", "change"), LANDS)
def test_what_is_no_dependency_change_lands(
    tmp_path: Path, base: dict[str, str], change: dict[str, str]
) -> None:
    repo = _repo(tmp_path, base)
    _commit(repo, change)
    code, verdict = _check(repo)
    assert (code, verdict["verdict"]) == (0, "accepted"), verdict["reason"]


def test_a_change_to_the_directives_needs_review(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {})
    tighter = (repo / "selfforge.toml").read_text() + "\n[sandbox]\nmemory_mb = 2048\n"
    _commit(repo, {"selfforge.toml": tighter})
    code, verdict = _check(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    assert any("selfforge.toml" in item for item in verdict["review"])


@pytest.mark.parametrize(("path", "before", "after"), [
    ("pyproject.toml", PYPROJECT, PYPROJECT.replace("[]", '["attrs"]')),
    ("requirements.txt", REQUIREMENTS, REQUIREMENTS + "requests==2.32.0\n"),
])  # fmt: skip
def test_run_still_refuses_a_models_python_dependency_change(
    tmp_path: Path, script, path: str, before: str, after: str
) -> None:
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, path: before}
    repo = make_repo(tmp_path / "r", files, directives())
    edit = (
        f"{path}\n<<<<<<< SEARCH\n{before.rstrip()}\n=======\n{after.rstrip()}\n>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD + edit]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected"
    assert f"changes {path}, a dependency change" in str(attempt["reason"])
    assert (repo / path).read_text() == before
