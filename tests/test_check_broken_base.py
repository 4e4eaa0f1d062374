"""`selfforge check` on a base whose suite does not build (#33, done-when: 0 could not
judge). Nothing of the base's suite runs, so no outcome of the base can tell a
regression: a person's change is judged by the whole suite instead — the base's tests on
the change's code, and the change's own suite, must build and pass entirely — and the
verdict says so. Deleting the failing test does not help: the judged commit runs the
base's version of it. A change that leaves the suite unbuilt still cannot be judged
(exit 2), and `run` still stops at such a base (tests/test_baseline_stops.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import PYTEST, cli, directives, git, make_repo, needs_cargo

WHOLE = "the base does not build: judged as 'the whole suite must pass'"

# The module under test imports what does not exist: no test module collects.
BROKEN_CALC = (
    "import no_such_module\n\n\ndef add(a, b):\n    return a + b\n\n\n"
    "def sub(a, b):\n    return a + b\n"
)
FIXED_CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TEST_ADD = (
    "import sys\n\nimport pytest\n\nfrom calc import add\n\n\ndef test_add():\n"
    "    assert add(2, 3) == 5\n\n\n"
    # the base's own skip: the author's to make, not the change's
    '@pytest.mark.skipif(sys.maxsize > 0, reason="not on this platform")\n'
    "def test_add_elsewhere():\n    assert add(1, 1) == 3\n"
)
TEST_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"


def _broken_python(tmp_path: Path) -> Path:
    files = {"calc.py": BROKEN_CALC, "test_add.py": TEST_ADD, "test_sub.py": TEST_SUB}
    return make_repo(tmp_path / "repo", files, directives(PYTEST))


def _commit(repo: Path, files: dict[str, str | None], message: str) -> None:
    for name, text in files.items():
        if text is None:
            git(repo, "rm", "-q", name)
        else:
            (repo / name).write_text(text)
            git(repo, "add", name)
    git(repo, "commit", "-qm", message)


def _check(repo: Path) -> tuple[int, dict, str]:
    proc = cli("check", "--repo", str(repo), "--json")
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said
    return proc.returncode, json.loads(proc.stdout[proc.stdout.index("{") :]), said


def test_a_commit_that_makes_a_broken_python_base_import_is_accepted(tmp_path: Path) -> None:
    repo = _broken_python(tmp_path)
    _commit(repo, {"calc.py": FIXED_CALC}, "calc: drop the import that does not exist")
    code, verdict, said = _check(repo)
    assert code == 0, said
    assert verdict["verdict"] == "accepted"
    assert WHOLE in verdict["reason"]
    # journaled as the attempt's criterion too
    shown = cli("show", "last", "--repo", str(repo)).stdout
    assert "whole suite must pass" in shown


def test_a_fix_of_the_import_that_leaves_a_test_failing_is_rejected(tmp_path: Path) -> None:
    repo = _broken_python(tmp_path)
    still = FIXED_CALC.replace("a - b", "a + b")
    _commit(repo, {"calc.py": still}, "calc: drop the import, sub still adds")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert verdict["verdict"] == "rejected"
    assert WHOLE in verdict["reason"]
    assert "test_sub.py::test_sub" in verdict["reason"]
    assert "assert 8 == 2" in verdict["reason"]  # the runner's own message


def test_deleting_the_failing_test_file_does_not_make_a_broken_base_pass(tmp_path: Path) -> None:
    repo = _broken_python(tmp_path)
    still = FIXED_CALC.replace("a - b", "a + b")
    _commit(repo, {"calc.py": still, "test_sub.py": None}, "calc: drop the import; no test_sub")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert "test_sub.py::test_sub" in verdict["reason"]


def test_a_test_skipped_by_the_change_s_code_is_no_pass(tmp_path: Path) -> None:
    repo = _broken_python(tmp_path)
    skipping = FIXED_CALC.replace(
        "def sub(a, b):\n    return a - b\n",
        'def sub(a, b):\n    import pytest\n\n    pytest.skip("later")\n',
    )
    _commit(repo, {"calc.py": skipping}, "calc: drop the import; sub skips")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert "skipped by code the change added" in verdict["reason"]
    assert "test_sub.py::test_sub" in verdict["reason"]


def test_a_skip_in_the_module_under_test_is_no_pass_beside_the_base_s_skipif(
    tmp_path: Path,
) -> None:
    """test_add.py has a skipif of its own (the author's, still accepted: the first test
    of this module), so the mention of a skip in the test file is no longer enough: the
    plugin says the skip was raised in calc.py, the change's code."""
    repo = _broken_python(tmp_path)
    skipping = FIXED_CALC.replace(
        "def add(a, b):\n    return a + b\n",
        "def add(a, b):\n    import sys\n\n    if 'pytest' in sys.modules:\n"
        "        import pytest\n\n        pytest.skip('later')\n    return a + b\n",
    )
    _commit(repo, {"calc.py": skipping}, "calc: drop the import; add skips under test")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert "skipped by code the change added" in verdict["reason"]
    assert "test_add.py::test_add: skipped (raised in calc.py)" in verdict["reason"]
    assert "test_add_elsewhere" not in verdict["reason"]  # the base's own skipif


def test_a_skip_the_base_s_conftest_raises_is_the_base_s(tmp_path: Path) -> None:
    """A fixture of the base's conftest.py skips a test whose file says nothing of skips:
    raised in the base's test infrastructure, it is the author's. And a base helper (not
    a test file, unchanged) that skips only when the change's code calls it is the
    change's doing: calc.py is on the skip's stack."""
    conftest = (
        "import pytest\n\n\n@pytest.fixture\ndef network():\n"
        "    pytest.skip('no network in the sandbox')\n"
    )
    test_net = "from calc import add\n\n\ndef test_fetch(network):\n    assert add(1, 1) == 2\n"
    helper = "import pytest\n\n\ndef not_yet():\n    pytest.skip('not yet')\n"
    files = {
        "calc.py": BROKEN_CALC,
        "conftest.py": conftest,
        "test_net.py": test_net,
        "test_sub.py": TEST_SUB,
        "helper.py": helper,
    }
    repo = make_repo(tmp_path / "repo", files, directives(PYTEST))
    _commit(repo, {"calc.py": FIXED_CALC}, "calc: drop the import that does not exist")
    code, verdict, said = _check(repo)
    assert code == 0, said
    assert WHOLE in verdict["reason"]

    _commit(repo, {"calc.py": BROKEN_CALC}, "break it again")
    through = FIXED_CALC.replace(
        "def sub(a, b):\n    return a - b\n",
        "def sub(a, b):\n    import helper\n\n    helper.not_yet()\n",
    )
    _commit(repo, {"calc.py": through}, "calc: drop the import; sub not yet")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert "test_sub.py::test_sub: skipped (raised in helper.py)" in verdict["reason"]


def test_a_test_module_the_change_s_code_skips_as_a_whole_is_no_pass(tmp_path: Path) -> None:
    """calc.py skips at import: test_add.py is skipped as it is collected, so none of its
    tests is in the results at all (test_mul.py's pass). The skip was raised in calc.py,
    the change's code."""
    mathx = "import no_such_module\n\n\ndef mul(a, b):\n    return a * b\n"
    test_mul = "from mathx import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    files = {"calc.py": BROKEN_CALC, "test_add.py": TEST_ADD, "mathx.py": mathx}
    repo = make_repo(tmp_path / "repo", {**files, "test_mul.py": test_mul}, directives(PYTEST))
    skipping = (
        "import sys\n\nif 'pytest' in sys.modules:\n    import pytest\n\n"
        "    pytest.skip('later', allow_module_level=True)\n\n\n" + FIXED_CALC
    )
    fixed_mathx = mathx.replace("import no_such_module\n\n\n", "")
    _commit(repo, {"calc.py": skipping, "mathx.py": fixed_mathx}, "fix both; calc skips")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert "test_add.py: skipped as a whole (raised in calc.py)" in verdict["reason"]


CARGO_TOML = '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
LIB = """pub fn add(a: i32, b: i32) -> i32 {
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


RUSTUP_SAYS = (
    "error: rustup could not choose a version of cargo to run, because one wasn't specified "
    "explicitly, and no default is configured.\n"
    "help: run 'rustup default stable' to download the latest stable release of Rust and "
    "set it as your default toolchain.\n"
)


def test_what_still_cannot_be_judged(tmp_path: Path) -> None:
    """A change that leaves the suite unbuilt; and a toolchain that does not start, which
    is no base that does not build: nothing could build it here (the fix is the
    machine's, not the change's)."""
    repo = _broken_python(tmp_path)
    _commit(repo, {"README.md": "calc\n"}, "docs")
    proc = cli("check", "--repo", str(repo))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "every test module fails to import" in proc.stderr
    assert "does not make it build either" in proc.stderr

    fake = f"#!/bin/sh\ncat >&2 <<'EOF'\n{RUSTUP_SAYS}EOF\nexit 1\n"
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "bin/cargo": fake}
    crate = make_repo(tmp_path / "crate", files, directives('PATH="$PWD/bin:$PATH" cargo test'))
    (crate / "bin" / "cargo").chmod(0o755)
    git(crate, "add", "bin/cargo")
    git(crate, "commit", "-qm", "a cargo that cannot choose a toolchain")
    _commit(crate, {"src/lib.rs": LIB.replace("a + b", "b + a")}, "lib: commute")
    proc = cli("check", "--repo", str(crate))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "rustup default" in proc.stderr
    assert "whole suite" not in proc.stdout + proc.stderr


# --- Rust and Go -----------------------------------------------------------------------


@needs_cargo
def test_a_commit_that_makes_a_crate_compile_is_accepted(tmp_path: Path) -> None:
    files = {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB.replace("    a + b\n}", "    a + \n}", 1)}
    repo = make_repo(tmp_path / "repo", files, directives("cargo test --offline"))
    _commit(repo, {"src/lib.rs": LIB}, "lib: finish add")
    code, verdict, said = _check(repo)
    assert code == 0, said
    assert WHOLE in verdict["reason"]


GO_MOD = "module example.com/mathx\n\ngo 1.19\n"
MATHX = "package mathx\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
MATHX_TEST = (
    'package mathx\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n'
    '\tif Add(2, 3) != 5 {\n\t\tt.Fatalf("Add(2, 3) = %d", Add(2, 3))\n\t}\n}\n'
)


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go toolchain")
def test_a_commit_that_makes_a_go_package_build_is_accepted(tmp_path: Path) -> None:
    files = {
        "go.mod": GO_MOD,
        "mathx.go": MATHX.replace("a + b", "a +"),
        "mathx_test.go": MATHX_TEST,
    }
    repo = make_repo(tmp_path / "repo", files, directives("go test ./..."))
    _commit(repo, {"mathx.go": MATHX}, "mathx: finish Add")
    code, verdict, said = _check(repo)
    assert code == 0, said
    assert WHOLE in verdict["reason"]
    broken = MATHX_TEST.replace("Add(2, 3) != 5", "Add(2, 3) != 6")
    _commit(repo, {"mathx.go": MATHX.replace("a + b", "a +")}, "break it again")
    _commit(repo, {"mathx.go": MATHX, "mathx_test.go": broken}, "fix, with a wrong test")
    code, verdict, said = _check(repo)
    assert code == 1, said
    assert "TestAdd" in verdict["reason"]
