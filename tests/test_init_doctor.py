"""`init` and `doctor` know the project: its virtualenv, its test runner's real command,
the lint tools it has; `doctor` runs the checks once and gives a fix per failure."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, cli, git, make_repo

FAILING = TEST_CALC  # add() subtracts: test_add fails, the other two pass


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repo with tests/ and a real virtualenv in .venv that can import pytest."""
    repo = make_repo(tmp_path / "p", {"calc.py": CALC, "tests/test_calc.py": FAILING})
    (repo / "tests" / "conftest.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parents[1]))\n"
    )
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "conftest")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    [packages] = (repo / ".venv" / "lib").glob("python*/site-packages")
    # The test environment's packages (pytest) become the project's, as if installed there.
    (packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return repo


def _init(repo: Path) -> tuple[str, str]:
    proc = cli("init", "--force", "--repo", str(repo), check=True)
    return proc.stdout, (repo / "selfforge.toml").read_text()


def _line(toml: str, key: str) -> str | None:
    found = [ln for ln in toml.splitlines() if ln.startswith(f"{key} = ")]
    return found[0].split(" = ", 1)[1].strip('"') if found else None


def test_init_uses_the_project_venv_and_no_lint_tool_it_lacks(project: Path) -> None:
    out, toml = _init(project)
    assert _line(toml, "test") == ".venv/bin/python -m pytest -q"
    assert _line(toml, "lint") is None  # ruff may be on this machine; the project has none
    assert "virtualenv: .venv" in out and "no lint tool installed for this project" in out
    assert "[checks]" in out  # escaped, not eaten as markup


def test_init_picks_up_a_lint_tool_installed_in_the_venv(project: Path) -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    (project / ".venv" / "bin" / "ruff").symlink_to(ruff)
    out, toml = _init(project)
    assert _line(toml, "lint") == ".venv/bin/ruff check --output-format concise ."
    assert "installed in .venv" in out
    # and the lint command's findings proposed as a measure (issue 42.1), commented out
    assert '# [[measures]]\n# name = "lint"\n# kind = "lint"\n' in toml, toml
    assert "measures:   lint" in out, out


@pytest.mark.parametrize(
    ("files", "expected", "source"),
    [
        (
            {
                "tox.ini": "[tox]\nenvlist = py\n[testenv]\ndeps = pytest\ncommands =\n"
                "    pytest {posargs} --cov=calc -x tests\n"
            },
            ".venv/bin/python -m pytest -q -x tests",
            "tox.ini [testenv] commands",
        ),
        (  # coverage's and xdist's options go with their values; tox's substitutions too
            {
                "tox.ini": "[tox]\nenvlist = py\n[testenv]\ndeps = pytest\ncommands =\n"
                "    pytest --cov=calc --cov-report term-missing -n 2 "
                "--basetemp={envtmpdir} --junitxml {toxworkdir}/junit.xml {posargs:tests}\n"
            },
            ".venv/bin/python -m pytest -q tests",
            "tox.ini [testenv] commands",
        ),
        (
            {
                "noxfile.py": "import nox\n\n@nox.session\ndef tests(session):\n"
                "    session.install('pytest')\n    session.run('pytest', '-x', 'tests')\n"
            },
            ".venv/bin/python -m pytest -q -x tests",
            "noxfile.py",
        ),
        (
            {"Makefile": "PYTHON ?= python\n\ntest:\n\t$(PYTHON) -m pytest tests\n"},
            ".venv/bin/python -m pytest -q tests",
            "make test",
        ),
        (  # tox cannot install its environment in the sandbox (no network): pytest instead
            {"Makefile": "test:\n\ttox -e py311\n\tcoverage report\n"},
            ".venv/bin/python -m pytest -q",
            "not used:   make test",
        ),
    ],
)
def test_init_reads_the_runner_s_real_command(
    project: Path, files: dict[str, str], expected: str, source: str
) -> None:
    for name, text in files.items():
        (project / name).write_text(text)
    out, toml = _init(project)
    assert _line(toml, "test") == expected
    assert source in out


def test_doctor_runs_the_checks_once_and_lists_them(project: Path, script) -> None:
    (project / ".venv" / "bin" / "ruff").symlink_to(
        shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    )
    _init(project)
    git(project, "add", "selfforge.toml")  # uncommitted, doctor is not ready: test_doctor_truth
    git(project, "commit", "-qm", "selfforge directives")
    proc = cli("doctor", "--repo", str(project), "--model", script())
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "ok   virtualenv: .venv" in out
    assert (
        "ok   test check: `.venv/bin/python -m pytest -q`: 3 collected, 2 passed, 1 failed" in out
    )
    assert "ok   lint check: `.venv/bin/ruff check --output-format concise .`: " in out
    assert "model: script:" in out and "sandbox" in out
    assert out.rstrip().endswith("ready for run.")
    assert git(project, "worktree", "list").count("\n") == 1  # its worktree is gone


def test_doctor_says_how_to_fix_what_fails(project: Path, script) -> None:
    (project / "selfforge.toml").write_text(
        '[checks]\ntest = "python -m pytest -q nothing_here_test.py"\n'
        'lint = "no-such-linter-xyz ."\n'
    )
    proc = cli("doctor", "--repo", str(project), "--model", script())
    out = proc.stdout
    assert proc.returncode == 1
    assert "FAIL test check" in out and "fix:" in out
    assert "FAIL lint check: 'no-such-linter-xyz' not found on PATH" in out
    assert "fix [checks] lint in selfforge.toml" in out  # brackets shown, not eaten
    assert "problem(s) to fix" in out and "Traceback" not in proc.stderr


UNITTEST_CALC = """import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def test_init_says_what_a_unittest_command_cannot_do_and_what_would(
    tmp_path: Path, project: Path
) -> None:
    """more-itertools' shape: the command init writes runs unittest, whose outcomes are
    read from its output: init says that its tests cannot be picked nor measured, and
    the pytest command that runs the same suite with both. A pytest command gets no such
    note."""
    files = {"calc.py": CALC.replace("a - b", "a + b", 1), "test_calc.py": UNITTEST_CALC}
    repo = make_repo(tmp_path / "u", files)
    out, toml = _init(repo)
    assert "-m unittest -v" in str(_line(toml, "test")), toml
    flat = " ".join(out.split())
    assert "note: it runs unittest" in flat and '"python -m pytest -q"' in flat, out
    out, _ = _init(project)
    assert "it runs unittest" not in out
