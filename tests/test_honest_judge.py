"""The judge judges the candidate: it tests the proposed code in every common layout,
refuses a set-up that cannot judge, and lands only progress."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    CALC,
    FIX_ADD,
    FIX_ADD_BREAK_SUB,
    PYTEST,
    TEST_CALC,
    cli,
    directives,
    git,
    log_json,
    make_repo,
)

PKG_CALC = CALC
PKG_TESTS = TEST_CALC.replace("from calc import", "from pkg.calc import")
PKG_FIX = FIX_ADD.replace("calc.py\n", "src/pkg/calc.py\n", 1)
PKG_BREAK = FIX_ADD_BREAK_SUB.replace("calc.py\n", "src/pkg/calc.py\n", 1)


def _venv_with_editable_install(tmp_path: Path, checkout: Path) -> Path:
    """A project venv with pytest, whose `pkg` resolves to the user's checkout (what
    `pip install -e .` leaves: a .pth file naming the checkout's src/)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib, "deps.pth").write_text("\n".join(deps) + "\n")
    Path(purelib, "__editable__.pkg-0.1.pth").write_text(str(checkout / "src") + "\n")
    return venv / "bin" / "python"


def _src_layout(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    python = _venv_with_editable_install(tmp_path, repo)
    make_repo(
        repo,
        {"src/pkg/__init__.py": "", "src/pkg/calc.py": PKG_CALC, "tests/test_calc.py": PKG_TESTS},
        directives(f"{python} -m pytest -q"),
    )
    return repo, str(python)


def test_src_layout_installed_editable_tests_the_candidate(tmp_path: Path, script) -> None:
    repo, _ = _src_layout(tmp_path)
    spec = script(propose=[PKG_BREAK, PKG_FIX])
    cli("run", "--repo", str(repo), "--model", spec, "--cycles", "2", check=True)
    attempts = log_json(repo)
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted"]
    assert "test_sub" in attempts[0]["reason"]
    assert "return a + b" in (repo / "src/pkg/calc.py").read_text()


@pytest.mark.parametrize("layout", ["flat", "tests-next-to-code", "testpaths-names-the-package"])
def test_other_layouts_reject_a_break_and_land_a_fix(tmp_path: Path, script, layout) -> None:
    """The package's tests inside it, and (toolz's layout) ``testpaths`` naming the
    package itself: its code is still code, a fix to it is no test edit."""
    if layout == "flat":
        files = {"calc.py": CALC, "tests/test_calc.py": TEST_CALC}
        fix, breaking = FIX_ADD, FIX_ADD_BREAK_SUB
    else:
        files = {"pkg/__init__.py": "", "pkg/calc.py": CALC, "pkg/test_calc.py": PKG_TESTS}
        fix = FIX_ADD.replace("calc.py\n", "pkg/calc.py\n", 1)
        breaking = FIX_ADD_BREAK_SUB.replace("calc.py\n", "pkg/calc.py\n", 1)
    if layout == "testpaths-names-the-package":
        files["pyproject.toml"] = '[tool.pytest.ini_options]\ntestpaths = ["pkg"]\n'
    repo = make_repo(tmp_path / "repo", files, directives(PYTEST))
    spec = script(propose=[breaking, fix])
    cli("run", "--repo", str(repo), "--model", spec, "--cycles", "2", check=True)
    assert [a["outcome"] for a in log_json(repo)] == ["rejected", "accepted"]


def test_a_misspelled_test_command_stops_before_any_model_call(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives("pytset -q")
    )
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 1
    assert "pytset" in proc.stderr and "could not run" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert log_json(repo) == []


def test_an_empty_test_selection_stops_the_run(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(f"{PYTEST} -k nothing_matches_this"),
    )
    proc = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]))
    assert proc.returncode == 1
    assert "no tests" in proc.stderr or "exited 5" in proc.stderr, proc.stderr
    assert log_json(repo) == []


def test_a_module_that_fails_to_collect_does_not_erase_the_baseline(tmp_path: Path, script) -> None:
    broken = "from calc import divide  # not written yet\n\n\ndef test_divide():\n    pass\n"
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_divide.py": broken},
        directives(PYTEST),
    )
    # Breaking sub() must still be caught although one module cannot be imported.
    spec = script(propose=[FIX_ADD_BREAK_SUB, FIX_ADD])
    proc = cli("run", "--repo", str(repo), "--model", spec, "--cycles", "2", check=True)
    assert "fail to import" in proc.stdout
    attempts = log_json(repo)
    assert [a["outcome"] for a in attempts] == ["rejected", "accepted"]
    assert "test_sub" in attempts[0]["reason"]


def test_a_candidate_that_adds_a_collection_error_is_rejected(tmp_path: Path, script) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        directives(PYTEST, goals=("Tidy calc.py",)),
    )
    bad_import = (
        FIX_ADD + "\ncalc.py\n<<<<<<< SEARCH\n=======\nimport no_such_module\n>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[bad_import]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected"
    assert "fail to import" in attempt["reason"] or "no_such_module" in attempt["reason"]


def test_a_change_that_does_not_fix_the_target_test_is_no_progress(
    tmp_path: Path, script, calc_repo: Path
) -> None:
    unrelated = (
        "calc.py\n<<<<<<< SEARCH\ndef mul(a, b):\n=======\n"
        "def mul(a, b):  # product\n>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[unrelated]), check=True)
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "rejected"
    assert attempt["reason"].startswith("no progress")
    assert "test_add" in attempt["reason"]
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[FIX_ADD]), check=True)
    assert log_json(calc_repo)[-1]["outcome"] == "accepted"


def test_a_run_that_exits_early_is_not_a_verdict(tmp_path: Path, script, calc_repo) -> None:
    forged = FIX_ADD_BREAK_SUB + (
        "\ncalc.py\n<<<<<<< SEARCH\n=======\nimport os\n\nos._exit(0)\n>>>>>>> REPLACE\n"
    )
    cli("run", "--repo", str(calc_repo), "--model", script(propose=[forged]), check=True)
    [attempt] = log_json(calc_repo)
    assert attempt["outcome"] == "rejected"
    assert "did not finish" in attempt["reason"] or "stopped before" in attempt["reason"]


def _fix_add_with_test_file(tmp_path: Path, script, name: str, text: str) -> Path:
    """A calc repo with one more test module; FIX_ADD must land through it."""
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, name: text},
        directives(PYTEST),
    )
    cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD]), check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt["reason"]
    return repo


def test_pytest_options_do_not_leak_into_pytest_runs_the_tests_start(
    tmp_path: Path, script
) -> None:
    """A test that runs pytest in a scratch directory sees the user's environment."""
    nested = (
        "import os, subprocess, sys\n\n\n"
        "def test_nested_pytest(tmp_path):\n"
        "    (tmp_path / 'test_x.py').write_text('def test_x():\\n    pass\\n')\n"
        "    proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', str(tmp_path)],\n"
        "                          capture_output=True, text=True, cwd=tmp_path)\n"
        "    assert proc.returncode == 0, proc.stdout + proc.stderr\n"
        "    assert 'SELFFORGE' not in ''.join(os.environ)\n"
    )
    _fix_add_with_test_file(tmp_path, script, "test_nested.py", nested)


def test_files_the_tests_create_or_stage_never_land(tmp_path: Path, script) -> None:
    stager = (
        "import subprocess\n\n\n"
        "def test_stage_a_file():\n"
        "    open('EXTRA.txt', 'w').write('x')\n"
        "    subprocess.run(['git', 'add', 'EXTRA.txt'])\n"
    )
    repo = _fix_add_with_test_file(tmp_path, script, "test_stage.py", stager)
    assert "EXTRA.txt" not in git(repo, "ls-tree", "-r", "--name-only", "HEAD")
    assert not (repo / "EXTRA.txt").exists()


def test_run_task_lands_one_task_without_a_planner(calc_repo: Path, script) -> None:
    spec = script(plan=["1. Something else entirely"], propose=[FIX_ADD])
    proc = cli(
        "run",
        "--repo",
        str(calc_repo),
        "--model",
        spec,
        "--task",
        "Fix add()",
        "--cycles",
        "3",
        "--json",
        check=True,
    )
    summary = [
        line for line in proc.stdout.splitlines() if '"summary"' in line or line.startswith("{")
    ]
    assert summary, proc.stdout
    [attempt] = log_json(calc_repo)
    assert attempt["task"] == "Fix add()" and attempt["outcome"] == "accepted"


def test_a_flaky_test_decides_nothing_and_is_listed(tmp_path: Path, script) -> None:
    """A test that fails once, in the candidate's run, and passes when run again (alone,
    and in the whole suite) is neither a regression nor progress; the run summary names
    it. (Its count lives outside the tree, which only an unsandboxed check can reach: in
    the sandbox nothing persists between runs.)"""
    coin = tmp_path / "coin"
    flaky = (
        "import os\n\n\n"
        "def test_coin():\n"
        f"    path = {str(coin)!r}\n"
        "    flips = int(open(path).read()) if os.path.exists(path) else 0\n"
        "    open(path, 'w').write(str(flips + 1))\n"
        "    assert flips != 1  # the second run ever: the candidate's\n"
    )
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "test_calc.py": TEST_CALC, "test_coin.py": flaky},
        directives(PYTEST, reruns=1),
    )
    spec = script(propose=[FIX_ADD])
    proc = cli("run", "--repo", str(repo), "--model", spec, "--no-sandbox")
    assert proc.returncode == 0, proc.stderr
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "accepted", attempt["reason"]
    assert "flaky" in proc.stdout and "test_coin.py::test_coin" in proc.stdout


ORDER_CALC = (
    "SCALE = 1\n\n\ndef scaled(x):\n    return x * SCALE\n\n\ndef double(x):\n    return 2 * x\n"
)
# The first test leaves SCALE changed, as many suites do with module settings.
ORDER_TESTS = {
    "test_a.py": (
        "import calc\n\n\ndef test_scaled():\n    calc.SCALE = 5\n    assert calc.scaled(2) == 10\n"
    ),
    "test_b.py": "import calc\n\n\ndef test_double():\n    assert calc.double(3) == 6\n",
    # a test that fails all along: the suite exits 1 before and after the change
    "test_c.py": "def test_not_written_yet():\n    assert False\n",
}
DOUBLE_VIA_SCALED = (
    "calc.py\n<<<<<<< SEARCH\ndef double(x):\n    return 2 * x\n=======\n"
    "def double(x):\n    return scaled(x) * 2\n>>>>>>> REPLACE\n"
)


def test_a_test_that_fails_in_the_suite_order_and_passes_alone_is_a_regression(
    tmp_path: Path, script
) -> None:
    """The change makes double() read a setting an earlier test leaves changed: in the
    suite's order test_double fails every time, run alone it passes. That is no flaky
    test (the user's own `pytest` fails on every run): it is rejected."""
    repo = make_repo(
        tmp_path / "repo", {"calc.py": ORDER_CALC, **ORDER_TESTS}, directives(PYTEST, reruns=1)
    )
    spec = script(propose=[DOUBLE_VIA_SCALED])
    cli("run", "--repo", str(repo), "--model", spec, "--task", "Make double() use scaled()")
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected", attempt
    assert "test_b.py::test_double: passed → failed" in attempt["reason"]
    assert "return 2 * x" in (repo / "calc.py").read_text()


def test_a_task_that_names_its_tests_is_not_done_until_each_passes(tmp_path: Path, script) -> None:
    """Fixing one of two named failing tests lands nothing; the rejection names the other."""
    broken_mul = CALC.replace("return a * b", "return a + b")
    task = "Make test_calc.py::test_add and test_calc.py::test_mul pass"
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": broken_mul, "test_calc.py": TEST_CALC},
        directives(PYTEST, goals=(task,)),
    )
    fix_mul = (
        "calc.py\n<<<<<<< SEARCH\ndef mul(a, b):\n    return a + b\n=======\n"
        "def mul(a, b):\n    return a * b\n>>>>>>> REPLACE\n"
    )
    spec = script(propose=[FIX_ADD, FIX_ADD + "\n" + fix_mul])
    cli("run", "--repo", str(repo), "--model", spec, "--cycles", "2", check=True)
    first, second = log_json(repo)
    assert first["outcome"] == "rejected"
    assert first["reason"].startswith("not done") and "test_calc.py::test_mul" in first["reason"]
    assert second["outcome"] == "accepted", second["reason"]
    assert "return a * b" in (repo / "calc.py").read_text()
