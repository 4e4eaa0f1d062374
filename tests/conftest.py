"""Shared fixtures: real temporary git repositories, scripted models, the real CLI."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "user@example.com",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "user@example.com",
}
PYTEST = f"{sys.executable} -m pytest -q"


def _cargo_starts() -> bool:
    """Is there a cargo that runs? With rustup, ``cargo`` on PATH is a proxy that fails
    in a HOME with no toolchain chosen (a fresh machine, the README's commands with an
    empty HOME): the tests that build crates skip there, as they do without cargo."""
    import shutil

    if shutil.which("cargo") is None:
        return False
    try:
        done = subprocess.run(["cargo", "--version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


CARGO_STARTS = _cargo_starts()


def _path_python_has_pytest() -> bool:
    """Does the Python that `selfforge init` finds for a project with no virtualenv of its
    own (``python``, else ``python3``, on PATH without selfforge's own venv) have pytest?
    On a fresh machine the system's has none: tests of what init detects there skip."""
    import shutil

    from selfforge.repo.detect import path_without_own

    path = path_without_own()
    python = shutil.which("python", path=path) or shutil.which("python3", path=path)
    if python is None:
        return False
    done = subprocess.run([python, "-c", "import pytest"], capture_output=True, timeout=60)
    return done.returncode == 0


PATH_PYTEST = _path_python_has_pytest()
needs_path_pytest = pytest.mark.skipif(
    not PATH_PYTEST,
    reason="needs pytest in the python on PATH (what init finds for a project with no venv)",
)
needs_cargo = pytest.mark.skipif(
    not CARGO_STARTS, reason="needs cargo with a toolchain (rustup: `rustup default stable`)"
)

CALC = """\
def add(a, b):
    return a - b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b
"""

TEST_CALC = """\
from calc import add, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_mul():
    assert mul(4, 3) == 12
"""

FIX_ADD = """calc.py
<<<<<<< SEARCH
def add(a, b):
    return a - b
=======
def add(a, b):
    return a + b
>>>>>>> REPLACE
"""

# Fixes add() but breaks sub(): must be rejected, naming test_sub.
FIX_ADD_BREAK_SUB = """calc.py
<<<<<<< SEARCH
def add(a, b):
    return a - b


def sub(a, b):
    return a - b
=======
def add(a, b):
    return a + b


def sub(a, b):
    return a + b
>>>>>>> REPLACE
"""


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY}
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env
    ).stdout


def make_repo(root: Path, files: dict[str, str], directives: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test User")
    git(root, "config", "user.email", "user@example.com")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if directives is not None:
        (root / "selfforge.toml").write_text(directives)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def directives(
    test: str | None = PYTEST,
    *,
    cycles: int = 1,
    max_repairs: int = 0,
    extra: str = "",
    goals: tuple[str, ...] = ("Fix add() so test_add passes",),
    land: str = "merge",
    lint: str | None = None,
    reruns: int = 0,
    stall_after: int = 3,
    env: tuple[str, ...] = (),
) -> str:
    """A selfforge.toml. ``reruns`` is 0 unless a test is about flaky tests: the small
    projects here are deterministic, and a rerun on both trees doubles a run's test time."""
    goal_list = ", ".join(json.dumps(g) for g in goals)
    test_line = f"test = {json.dumps(test)}" if test else ""
    if lint:
        test_line += f"\nlint = {json.dumps(lint)}"
    return f"""
[goals]
items = [{goal_list}]

[checks]
{test_line}
timeout_s = 120
reruns = {reruns}
env = {json.dumps(list(env))}

[limits]
cycles = {cycles}
max_repairs = {max_repairs}
stall_after = {stall_after}

[land]
mode = "{land}"
{extra}
"""


# The test files that take longest (CI's --durations), started first: with pytest-xdist
# handing out one test at a time (`--maxschedchunk 1`, as the README's command runs the
# tiers), a run ends on short tests on both workers, not on one long test on one of them.
LONG_FIRST = (
    "tests/test_self_measure.py",
    "tests/test_same_verdict.py",
    "tests/test_selfjudge_landing.py",
    "tests/test_self_improvement.py",
    "tests/test_bench_gate.py",
    "tests/test_bench_shapes.py",
    "tests/test_agent_proposers.py",
    "tests/test_measured_goals.py",
    "tests/test_unseen_histories.py",
    "tests/test_bench.py",
    "tests/test_bench_rust.py",
    "tests/test_measure_kinds.py",
    "tests/test_bench_agent_proposer.py",
    "tests/test_cold_check_concurrency.py",
    "tests/test_bench_perf.py",
    "tests/test_coverage_credit.py",
    "tests/test_planned_from_numbers.py",
    "tests/test_demo.py",
    "tests/test_wheel_install.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return LONG_FIRST.index(path) if path in LONG_FIRST else len(LONG_FIRST)

    items.sort(key=rank)  # stable: each file's own order kept


@pytest.fixture(scope="session", autouse=True)
def _inner_pytest_without_plugins() -> None:
    """The pytest runs the tests start (through selfforge or not) load no installed plugin.

    This venv's plugins (hypothesis, xdist, httpserver, anyio) cost ~1.5 s of start-up
    per run and none of the small projects the tests build uses one; the judge's own
    plugin is named with ``-p`` and loads regardless. Set here, in each worker, so the
    outer pytest keeps its plugins.
    """
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # A resident selfforge the developer started never serves the suite's commands
    # (tests/test_resident.py starts its own and turns this back on; _resident below
    # starts the worker's own).
    os.environ["SELFFORGE_RESIDENT"] = "0"


# Modules whose tests signal, kill or watch the process group of the `selfforge` they
# start (a crash, Ctrl-C, a daemon, a spawner's children): the command runs in that very
# process, as with no resident, not in a resident's worker.
NO_RESIDENT = frozenset({
    "serve_helpers", "test_bench", "test_clean", "test_parallel", "test_recovery",
    "test_one_spawner", "test_sandbox_attacks", "test_say_what_failed", "test_serve",
    "test_serve_browser", "test_serve_summary", "test_live_view", "test_resident",
    "test_resident_autostart", "test_resident_reach", "test_launch_exit",
    "test_measure_overhead", "test_wheel_install",
})  # fmt: skip


@pytest.fixture(scope="session", autouse=True)
def _resident(
    tmp_path_factory: pytest.TempPathFactory,
    _inner_pytest_without_plugins: None,
    _trees_outside_var_tmp: None,
) -> Iterator[None]:
    """One resident selfforge per worker serves the `selfforge` commands the tests start
    (as a user's machine runs them: `cli/launch.py` hands each to a fork of the resident,
    with the caller's environment, folder and descriptors): the ~0.5 s each command
    spent importing selfforge is paid once. ``SELFFORGE_TEST_RESIDENT=0`` runs the suite
    without it; the modules of ``NO_RESIDENT`` always do."""
    from selfforge.judge.sandbox import bwrap

    # not in a suite a check runs (selfforge's own, in a self-change's sandbox)
    if os.environ.get("SELFFORGE_TEST_RESIDENT", "1") == "0" or bwrap.inside():
        yield
        return
    folder = tmp_path_factory.mktemp("resident")
    env = {**os.environ, "SELFFORGE_RESIDENT_DIR": str(folder), "SELFFORGE_RESIDENT": "0"}
    started = subprocess.run(
        [sys.executable, "-m", "selfforge", "resident", "start", "--idle", "0"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if started.returncode != 0:  # the suite still runs, each command on its own
        yield
        return
    os.environ["SELFFORGE_RESIDENT_DIR"] = str(folder)
    os.environ["SELFFORGE_RESIDENT"] = "1"  # use this one, never start another
    try:
        yield
    finally:
        subprocess.run(
            [sys.executable, "-m", "selfforge", "resident", "stop"],
            env=env, capture_output=True, check=False,
        )  # fmt: skip


@pytest.fixture(autouse=True)
def _no_resident_here(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.module.__name__.rpartition(".")[2] in NO_RESIDENT:
        monkeypatch.setenv("SELFFORGE_RESIDENT", "0")


@pytest.fixture(scope="session", autouse=True)
def _trees_outside_var_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """selfforge's copies of the code (trees.py) go in a folder of this session's, not in
    /var/tmp/selfforge-<uid>: the suite leaves nothing behind there."""
    os.environ["SELFFORGE_TREES"] = str(tmp_path_factory.mktemp("trees"))


@pytest.fixture
def calc_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives())


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., str]:
    """Write a scripted-model file; return its model spec."""
    counter = iter(range(1000))

    def write(**roles: list[object]) -> str:
        path = tmp_path / f"script-{next(counter)}.json"
        path.write_text(json.dumps(roles))
        return f"script:{path}"

    return write


def snapshot(root: Path) -> dict[str, object]:
    """HEAD, index, status and every file's bytes (outside .git and .selfforge)."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".git/", ".selfforge/")) or rel in (".git", ".selfforge"):
            continue
        if path.is_file():
            files[rel] = path.read_bytes()
    return {
        "head": git(root, "rev-parse", "HEAD"),
        "branch": git(root, "symbolic-ref", "-q", "HEAD"),
        "index": git(root, "ls-files", "-s"),
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
        "files": files,
    }


# Most commands run in the test's own process: the same `main()` the console script
# calls, with its own argv, environment and captured output, but without a Python
# start-up and selfforge's imports (~0.5 s of CPU per call, the largest cost of the
# suite after the checks themselves). selfforge keeps no state between calls that a
# later call could see (it never changes its environment or working directory), and
# everything a run executes (checks, git, the smoke run) is a real subprocess either way.
# A subprocess is kept where the process itself is under test: a run that forks workers
# (--parallel, --backend), servers, signals, a terminal, the installed console script,
# and a call given an environment of its own (what it probes once, it may cache).
IN_PROCESS = frozenset({"log", "show", "status", "export", "plan"})  # and run, see below
os.environ.setdefault("COLUMNS", "200")  # before selfforge's consoles are made


def cli(
    *args: str, cwd: Path | None = None, check: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    if args and _in_process(args) and cwd is None and not env:
        proc = _cli_in_process(list(args))
    else:
        proc = subprocess.run(
            [sys.executable, "-m", "selfforge", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
            stdin=subprocess.DEVNULL,
        )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"selfforge {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _in_process(args: tuple[str, ...]) -> bool:
    if args[0] == "run":
        return not any(a.startswith(("--parallel", "--backend")) for a in args)
    return args[0] in IN_PROCESS


def _cli_in_process(args: list[str]) -> subprocess.CompletedProcess[str]:
    import contextlib
    import io
    import traceback

    from selfforge.cli.program import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_argv = dict(os.environ), sys.argv
    os.environ["COLUMNS"] = "200"
    sys.argv = ["selfforge", *args]
    code: int = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:  # what the interpreter does with it
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
            except BaseException:
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
    return subprocess.CompletedProcess(["selfforge", *args], code, out.getvalue(), err.getvalue())


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder ``build`` fills once for the whole run, whichever xdist worker asks first
    (the others wait on a lock, then share it): an install that takes half a minute is
    not made again by each worker. ``build`` is given the empty folder."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    place, done = root / f"shared-{name}", root / f"shared-{name}.done"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            place.mkdir(exist_ok=True)
            build(place)
            done.touch()
    return place


def clone_self(parent: Path) -> tuple[Path, str]:
    """A clone of selfforge's own repository in ``parent/selfforge``, with a git identity
    and a one-test suite (the judge needs per-test results, and the whole suite is too
    slow): the clone and the test command that runs that suite."""
    copy = parent / "selfforge"
    root = Path(__file__).resolve().parents[1]
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(root), str(copy)], check=True)
    git(copy, "config", "user.name", "Test User")
    git(copy, "config", "user.email", "user@example.com")
    (copy / "tests" / "test_self_import.py").write_text(
        "def test_selfforge_imports():\n    import selfforge.cli.program  # noqa: F401\n"
    )
    return copy, f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_self_import.py"


def check_json(repo: Path, *args: str) -> tuple[int, dict]:
    """``selfforge check --json`` on ``repo`` as a user runs it (its own process): the
    exit code and the parsed JSON."""
    proc = subprocess.run(
        [sys.executable, "-m", "selfforge", "check", "--repo", str(repo), "--json", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def log_json(repo: Path) -> list[dict[str, object]]:
    return json.loads(cli("log", "--json", "--repo", str(repo), check=True).stdout)


def journal_test_runs(repo: Path) -> list[tuple[str, dict]]:
    """The journal's test runs, in order: (step name, summary counts)."""
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = db.execute("SELECT name, summary FROM checks WHERE name LIKE 'tests%' ORDER BY id")
        return [(name, json.loads(summary)) for name, summary in rows]


def trees_dir(repo: Path) -> Path:
    """Where selfforge keeps its copies of ``repo``'s code: outside the checkout, in the
    suite's SELFFORGE_TREES (see ``_trees_outside_var_tmp``)."""
    from selfforge.repo import trees

    common = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    return trees.for_repo(Path(git(repo, "rev-parse", "--show-toplevel").strip()), Path(common))


def left_worktrees(repo: Path) -> tuple[list[str], int]:
    """The worktree folders a run left in its trees folder (only the slots a run keeps for
    the next one should be there) and how many worktrees git lists besides the checkout;
    none is ever in the checkout's .selfforge, where the user's own tools would find it."""
    assert not (repo / ".selfforge" / "worktrees").exists()
    folder = trees_dir(repo) / "worktrees"
    names = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    return names, git(repo, "worktree", "list").count("\n") - 1


def wait_for(predicate: Callable[[], object], timeout: float = 90.0) -> None:
    """Poll ``predicate`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def group_running(pgid: int) -> bool:
    """Whether any live (non-zombie) process is in process group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def replay_every_kind(instances: Path, tmp_path: Path) -> dict[str, dict[str, object]]:
    """`bench run --gold --negatives` on a one-instance file: its rows by kind ("gold"
    for the gold change)."""
    results = tmp_path / "results.jsonl"
    proc = cli(
        "bench", "run", "--instances", str(instances), "--gold", "--negatives",
        "--results", str(results), "--work-dir", str(tmp_path / "work"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {r["kind"] or r["mode"]: r for r in map(json.loads, results.open())}


def assert_every_kind_but_order_rejected(rows: dict[str, dict[str, object]]) -> None:
    """Outside Python every kind of negative but `order` (a trick of pytest's test
    process) is drawn, and each is rejected."""
    from selfforge.bench.records import NEGATIVE_KINDS

    assert set(rows) == {"gold", *NEGATIVE_KINDS}
    assert rows["order"]["skipped"] and not rows["order"]["landed"]
    drawn = {k: r for k, r in rows.items() if k not in ("gold", "order")}
    assert all(r["skipped"] is None for r in drawn.values()), drawn
    assert not any(r["landed"] or r["error"] for r in drawn.values()), drawn
