"""A teammate's commit that adds a dependency and uses it (issue 33.2): the sandbox
installs nothing, so its tests fail for want of the new module. `selfforge check` says
"needs review" (exit 3), naming the module and the dependency change, not "rejected";
a real regression beside a dependency change, or a missing module without one, is still
rejected (exit 1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, check_json, directives, git, make_repo

PYPROJECT = '[project]\nname = "calc"\nversion = "0.1.0"\ndependencies = []\n'
WITH_DEP = PYPROJECT.replace("dependencies = []", 'dependencies = ["leftpadx>=1.0"]')
USES_DEP = "import leftpadx\n\n" + CALC.replace("return a - b", "return a + b", 1)


def _repo(tmp_path: Path, files: dict[str, str], test: str | None = None) -> Path:
    return make_repo(tmp_path / "r", files, directives(test) if test else directives())


def _commit(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")


def _python(tmp_path: Path) -> Path:
    files = {"calc.py": CALC.replace("return a - b", "return a + b", 1), "test_calc.py": TEST_CALC}
    return _repo(tmp_path, {**files, "pyproject.toml": PYPROJECT})


def test_a_commit_that_adds_a_dependency_and_imports_it_needs_review(tmp_path: Path) -> None:
    repo = _python(tmp_path)
    _commit(repo, {"pyproject.toml": WITH_DEP, "calc.py": USES_DEP})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    review = " ".join(verdict["review"])
    assert "pyproject.toml, a dependency change" in review
    assert "its tests need leftpadx, which the sandbox cannot install offline" in review


def test_a_regression_beside_a_dependency_change_is_still_rejected(tmp_path: Path) -> None:
    repo = _python(tmp_path)
    _commit(repo, {"pyproject.toml": WITH_DEP, "calc.py": CALC})  # add() broken, no import
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "test_add" in verdict["reason"]


def test_a_missing_module_without_a_dependency_change_is_rejected(tmp_path: Path) -> None:
    repo = _python(tmp_path)
    _commit(repo, {"calc.py": USES_DEP})  # imports what nothing declares
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]
    assert "fail to import" in verdict["reason"]


def test_a_project_module_the_change_removed_is_no_missing_dependency(tmp_path: Path) -> None:
    files = {
        "calc.py": "from helpers import plus\n\n\ndef add(a, b):\n    return plus(a, b)\n",
        "helpers.py": "def plus(a, b):\n    return a + b\n",
        "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        "pyproject.toml": PYPROJECT,
    }
    repo = _repo(tmp_path, files)
    (repo / "helpers.py").unlink()
    (repo / "calc.py").write_text(
        "from helpers2 import plus\n" + files["calc.py"].split("\n", 1)[1]
    )
    (repo / "helpers2").mkdir()  # the project's own package, left empty: its absence is the
    (repo / "helpers2" / "README").write_text("x\n")  # change's doing
    _commit(repo, {"pyproject.toml": WITH_DEP})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (1, "rejected"), verdict["reason"]


GO_MOD = "module example.com/v\n\ngo 1.19\n"
GO_CODE = "package v\n\nfunc Newer(a, b int) bool {\n\treturn a > b\n}\n"
GO_TEST = (
    'package v\n\nimport "testing"\n\nfunc TestNewer(t *testing.T) {\n'
    '\tif !Newer(2, 1) {\n\t\tt.Fatalf("2 should be newer than 1")\n\t}\n}\n'
)
GO_USES = (
    'package v\n\nimport "example.com/semverx"\n\n'
    "func Newer(a, b int) bool {\n\treturn semverx.Less(b, a)\n}\n"
)


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
def test_a_go_commit_that_requires_and_imports_a_module_needs_review(tmp_path: Path) -> None:
    files = {"go.mod": GO_MOD, "v.go": GO_CODE, "v_test.go": GO_TEST}
    repo = _repo(tmp_path, files, "go test ./...")
    _commit(repo, {"go.mod": GO_MOD + "\nrequire example.com/semverx v1.2.0\n", "v.go": GO_USES})
    code, verdict = check_json(repo)
    assert (code, verdict["verdict"]) == (3, "needs_review"), verdict["reason"]
    review = " ".join(verdict["review"])
    assert "go.mod, a dependency change" in review
    assert "example.com/semverx" in review and "cannot install offline" in review
