"""A stranger's install (#34): the wheel is the product. Built from this tree, installed
(not editable) into a fresh virtualenv with its modules compiled as pip compiles them,
and run with an empty home and no git identity: `selfforge demo` and `selfforge check`
work from the installed files alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import directives, git, make_repo

ROOT = Path(__file__).parents[1]
PIP = (sys.executable, "-m", "pip")

CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = """import unittest

from calc import add


class CalcTests(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def _build_wheel(dist: Path) -> Path:
    # No build isolation: hatchling comes from the dev environment (the dev extra), so the
    # build needs no network.
    built = _run(
        [*PIP, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)]
    )
    assert built.returncode == 0, built.stderr
    [wheel] = dist.glob("selfforge-*.whl")
    return wheel


def _install(wheel: Path, venv: Path) -> Path:
    """The wheel in a new virtualenv; its dependencies seen from this environment's
    site-packages as a plain folder (a path line: the .pth files there, the editable
    install's among them, are not read, so src/ is not on the path). Returns its
    site-packages."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = _run(
        [*PIP, "--python", str(python), "install", "-q", "--no-index", "--no-deps", str(wheel)]
    )
    assert installed.returncode == 0, installed.stderr
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
        ).stdout.strip()
    )
    (site / "dev-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # Compiled as pip compiles an install (whatever this pip's defaults): __pycache__
    # beside the demo's sample project too.
    _run([str(python), "-m", "compileall", "-q", str(site / "selfforge")], check=True)
    return site


def _stranger(tmp_path: Path, venv: Path) -> dict[str, str]:
    """An empty home, no git identity or configuration, the installed selfforge first."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "SELFFORGE_RESIDENT_DIR": str(tmp_path / "resident"),
        "SELFFORGE_RESIDENT": "1",  # its check starts no resident to outlive the test
        "COLUMNS": "200",
    }


def test_the_installed_wheel_runs_the_demo_and_a_check_with_an_empty_home(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    site = _install(_build_wheel(tmp_path / "dist"), venv)
    env = _stranger(tmp_path, venv)
    assert any((site / "selfforge" / "demo_data" / "project" / "__pycache__").glob("*.pyc"))
    where = _run(
        [str(venv / "bin" / "python"), "-c", "import selfforge; print(selfforge.__file__)"],
        env=env,
        check=True,
    )
    assert Path(where.stdout.strip()).parent == site / "selfforge"  # not src/

    project = tmp_path / "demo"
    demo = _run(["selfforge", "demo", "--replay", "--dir", str(project)], env=env, cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "1 accepted, 1 rejected" in demo.stdout
    first = git(project, "rev-list", "--max-parents=0", "HEAD").strip()
    sample = git(project, "ls-tree", "-r", "--name-only", first).split()
    assert sample == [  # no installer's cache, in the project or its bench/
        "bench/dedupe_bench.py",
        "calc.py",
        "dedupe.py",
        "selfforge.toml",
        "test_calc.py",
        "test_dedupe.py",
    ]

    python = venv / "bin" / "python"
    repo = make_repo(
        tmp_path / "r",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(f"{python} -m unittest -v"),
    )
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    git(repo, "commit", "-qam", "Fix add()")
    check = _run(["selfforge", "check", "HEAD", "--json", "--repo", str(repo)], env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["verdict"] == "accepted"
