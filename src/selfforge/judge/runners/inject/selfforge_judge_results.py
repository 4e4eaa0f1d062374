"""selfforge's pytest plugin: streams each result to the judge as it happens.

Loaded with ``-p selfforge_judge_results`` in a judged run only. It removes its own
settings from the environment at once (the user's PYTEST_ADDOPTS comes back once the
session has started, after pytest-xdist's workers, which load it too), so pytest runs
that the tests start themselves see the user's environment, not the judge's. Records
go over a Unix socket to the selfforge process that runs the check: written when each
test ends, they cannot be rewritten afterwards by the code under test. It also turns off
``-x``/``--maxfail`` (a verdict needs the whole suite) and keeps going past modules that
fail to collect.

When the judge asks (``coverage`` in its settings), it measures which lines of the
changed files the tests execute: with probes compiled into those files as they are
imported (``selfforge_line_probes``, no trace function: the rest of the suite runs at
full speed), or, for a file imported before the plugin, with the project's own
coverage.py (never installed by selfforge into the test process); and writes a summary
per process into the folder the judge reads (``runners/coverage.py``), or why nothing
was measured.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import socket
import sys
import warnings

import pytest

_SOCKET = os.environ.pop("SELFFORGE_JUDGE_SOCKET", "")


def _read_secret() -> str:
    """The run's secret, from the descriptor selfforge passed in; closed at once, so no
    code this process runs later (the code under test) finds it open."""
    try:
        fd = int(os.environ.pop("SELFFORGE_JUDGE_FD", "-1"))
    except ValueError:
        return ""
    if fd < 0:
        return ""
    try:
        return os.pread(fd, 256, 0).decode("ascii", "replace")
    except OSError:
        return ""
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


_SECRET = _read_secret()
_CONFIG = json.loads(os.environ.pop("SELFFORGE_JUDGE_CONFIG", "") or "{}")


def _restore_user_addopts() -> None:
    """PYTEST_ADDOPTS back to the user's: pytest runs the tests start see their own."""
    if "SELFFORGE_JUDGE_USER_ADDOPTS" in os.environ:
        user = os.environ.pop("SELFFORGE_JUDGE_USER_ADDOPTS")
        if user:
            os.environ["PYTEST_ADDOPTS"] = user
        else:
            os.environ.pop("PYTEST_ADDOPTS", None)


# The judged run's own process keeps the judge's PYTEST_ADDOPTS until its session has
# started: pytest-xdist starts its workers then, and they must load this plugin too (each
# collects the tests itself, so each must leave out what the judge leaves out). A worker,
# or any other pytest, puts the user's back at once.
if not _SOCKET:
    _restore_user_addopts()

_conn: socket.socket | None = None
_COVERAGE = _CONFIG.get("coverage") or None  # {"dir": folder, "include": [files]}
_cov = None  # the coverage.Coverage measuring this process, once started
_probes = None  # or the line probes' record (selfforge_line_probes)
_cov_note = ""  # why this process measures nothing
_cov_done = False


def _start_coverage(settings: dict | None) -> None:
    """Measure the changed files' lines in this process, from as early as it can: the
    plugin is imported before the project's conftest files and test modules. Probes
    compiled into those files when they are imported (``selfforge_line_probes``: the
    rest of the suite runs untraced); coverage.py, the project's own, only for a file
    this process imported before (pytest's own imports, when the change is to them)."""
    global _cov, _cov_note, _probes
    if not settings or _cov is not None or _probes is not None:
        return
    try:
        import selfforge_line_probes
    except ImportError:  # not beside the plugin (an older copy): coverage.py, as before
        pass
    else:
        _probes = selfforge_line_probes.install(list(settings["include"]))
        if _probes is not None:
            return
    try:
        import coverage
    except ImportError:
        _cov_note = (
            "coverage.py is not installed in the Python that runs the tests, and a changed "
            "file was imported before the tests started "
            "(pip install coverage, or add it to the project's test dependencies)"
        )
        return
    # Python 3.12+: sys.monitoring, which stops watching code outside the changed files
    # once seen (a trace function slows every line of every file); the variable is read
    # when the Coverage is made, and gone before any test runs.
    core = "COVERAGE_CORE" not in os.environ and sys.version_info >= (3, 12)
    if core:
        os.environ["COVERAGE_CORE"] = "sysmon"
    try:
        _cov = coverage.Coverage(
            data_file=None, include=list(settings["include"]), config_file=False
        )
        _cov.start()
    except Exception as error:  # a coverage.py too old, a tracer that cannot start
        _cov, _cov_note = None, f"coverage.py could not start ({type(error).__name__})"
    finally:
        if core:
            os.environ.pop("COVERAGE_CORE", None)


def _finish_coverage(settings: dict | None) -> None:
    """Stop measuring; write what ran of each changed file (or why nothing was). Once:
    an xdist worker ends with its session, never unconfigured."""
    global _cov_done
    if not settings or _cov_done:
        return
    _cov_done = True
    with warnings.catch_warnings():  # coverage.py's "no data collected": not the tests'
        warnings.simplefilter("ignore")
        _write_coverage(settings)


def _write_coverage(settings: dict) -> None:
    summary: dict = {"files": {}}
    note = _cov_note
    if _probes is not None:
        summary = {"tool": "line probes", "files": _probes.summary()}
    elif _cov is not None:
        summary["tool"] = "coverage.py"
        try:
            current = type(_cov).current()
        except Exception:
            current = _cov
        if current is not _cov:  # pytest-cov (or the tests) started a Coverage over ours
            note = "the test run measures its own coverage (pytest-cov): not measured"
        else:
            with contextlib.suppress(Exception):
                _cov.stop()
            for name in settings["include"]:
                try:
                    _, statements, _, missing, _ = _cov.analysis2(name)
                except Exception:  # not Python source coverage.py can read
                    continue
                ran = sorted(set(statements) - set(missing))
                summary["files"][name] = {"statements": list(statements), "executed": ran}
    if note:
        summary = {"note": note}
    with contextlib.suppress(OSError):
        path = os.path.join(settings["dir"], f"python-{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(summary, out)


if _SOCKET:
    _start_coverage(_COVERAGE)
_ONLY = list(_CONFIG.get("only") or ())  # absolute test files or node ids to run alone
_IGNORE = list(_CONFIG.get("ignore") or ())  # absolute paths left out of the run


# A flaky rerun's tests run again in this one process: absolute id -> [times, outcome];
# each until its outcome differs from the one given, ``times`` at most, ``budget`` seconds
# at most for them all (a failure confirmed 8 times costs one start-up, not eight).
def _real_id(test: str) -> str:
    """A test id with its file's path absolute and resolved (symlinks followed)."""
    file, sep, rest = test.partition("::")
    return f"{os.path.realpath(file)}{sep}{rest}"


_REPEAT = {_real_id(t): plan for t, plan in (_CONFIG.get("repeat") or {}).items()}
_REPEAT_BUDGET = float(_CONFIG.get("repeat_budget_s") or 60.0)


def _send(record: dict) -> None:
    if _conn is not None:
        with contextlib.suppress(OSError):
            _conn.sendall((json.dumps(record) + "\n").encode())


def _apply(config, only: list[str], ignore: list[str]) -> None:  # type: ignore[no-untyped-def]
    """The whole suite (no -x), past modules that fail to collect, without the files the
    judge leaves out, or only the tests it names."""
    config.option.maxfail = 0
    config.option.continue_on_collection_errors = True
    if ignore:
        config.option.ignore = [*(config.option.ignore or []), *ignore]
    if only:
        config.args[:] = only


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionstart(session):  # type: ignore[no-untyped-def]
    yield  # pytest-xdist has started its workers (with this plugin) by now
    _restore_user_addopts()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # type: ignore[no-untyped-def]
    """pytest-xdist: each worker parses the original command line again; what the judge
    leaves out or selects goes to it with its other settings."""
    if _SOCKET:
        judged = {"only": _ONLY, "ignore": _IGNORE, "coverage": _COVERAGE, "repeat": _REPEAT}
        node.workerinput["selfforge_judge"] = judged


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]
    """A worker that did not apply the judge's settings ran files the judge left out (or
    more than it named): its run cannot judge, and the judge is told so."""
    output = getattr(node, "workeroutput", None) or {}
    if (_ONLY or _IGNORE) and output.get("selfforge_judge") != "applied":
        worker = getattr(node, "gateway", None)
        name = getattr(worker, "id", "?")
        _send(
            {
                "ev": "collect_error",
                "id": f"<xdist worker {name}>",
                "msg": "the worker ran without selfforge's plugin settings (files the judge "
                "leaves out, tests it selects): its results cannot judge",
            }
        )


def pytest_configure(config) -> None:  # type: ignore[no-untyped-def]
    global _conn
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # an xdist worker: it runs what the judge says; the controller reports
        judged = worker.get("selfforge_judge")
        if judged is not None:
            _apply(config, list(judged["only"]), list(judged["ignore"]))
            _REPEAT.update(judged.get("repeat") or {})  # resolved by the controller
            config.workeroutput["selfforge_judge"] = "applied"
            config.selfforge_coverage = judged.get("coverage")
            _start_coverage(config.selfforge_coverage)
        return
    if not _SOCKET:
        return
    stop_early = bool(config.option.maxfail)
    _apply(config, _ONLY, _IGNORE)
    try:
        _conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _conn.connect(_SOCKET)
    except OSError:
        _conn = None
        return
    _send({"ev": "hello", "token": _SECRET})
    origins = {}
    for name in _CONFIG.get("modules") or ():
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = None
        if spec is not None:
            locations = list(spec.submodule_search_locations or [])
            origin = spec.origin if spec.origin not in (None, "namespace") else None
            origin = origin or (locations[0] if locations else None)
        origins[name] = origin
    _send(
        {
            "ev": "start",
            "pid": os.getpid(),
            "rootdir": str(config.rootpath),
            "stop_early_requested": stop_early,
            "imports": origins,
        }
    )


def pytest_collection_finish(session) -> None:  # type: ignore[no-untyped-def]
    _send({"ev": "collected", "n": len(session.items)})


def pytest_collectreport(report) -> None:  # type: ignore[no-untyped-def]
    if report.failed:
        text = str(report.longrepr or "")
        _send({"ev": "collect_error", "id": report.nodeid, "msg": text[-2000:]})
    elif report.skipped:  # a module skipped as a whole: its tests never show
        where = report.longrepr[0] if isinstance(report.longrepr, tuple) else "<unknown>"
        where = os.path.abspath(where) if not str(where).startswith("<") else str(where)
        if len(where) > _MAX_WHERE_PATH:
            where = "<a path too long>"
        _send({"ev": "collect_skip", "id": report.nodeid, "where": [where]})


# A skip or xfail's origin: at most this many files, each path at most this long (the
# channel refuses more: channel.MAX_WHERE, MAX_WHERE_PATH).
_MAX_WHERE = 16
_MAX_WHERE_PATH = 4096
_UNSEEN = ("<frozen ",)  # the import system's own frames, never the project's code


def _library_dirs() -> tuple[str, ...]:
    """Where the interpreter, the installed packages and pytest live: frames there are not
    the project's code (a venv inside the tree included)."""
    import sys

    import _pytest
    import pluggy

    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    dirs |= {os.path.dirname(m.__file__ or "") for m in (_pytest, pluggy, pytest)}
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs if d)


_LIBRARIES = _library_dirs()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    """Where a skip or xfail came from: every file of the project's code on its stack, the
    raiser last. The judge tells the base's tests' own skips from the code's by it."""
    raised = call.excinfo.value if call.excinfo is not None else None
    outcome = yield
    report = outcome.get_result()
    if report.skipped:  # a skip, or an xfail (pytest reports those as skipped)
        if raised is None and call.excinfo is not None:  # unittest's, set in the hook
            raised = call.excinfo.value
        report.selfforge_where = _where(item, raised, hasattr(report, "wasxfail"))


def _where(item, raised: BaseException | None, xfail: bool) -> list[str]:  # type: ignore[no-untyped-def]
    """The files the skip's exception passed through, outside the libraries; the test's
    own file for a mark (raised by pytest, or the expected failure of an xfail mark)."""
    test_file = os.fspath(getattr(item, "path", None) or item.fspath)
    context = getattr(raised, "__context__", None)
    if isinstance(raised, pytest.skip.Exception) and type(context).__name__ == "SkipTest":
        raised = context  # a TestCase's SkipTest, which unittest hands pytest as a skip
    if raised is None or (xfail and not isinstance(raised, pytest.xfail.Exception)):
        return [test_file]
    files: list[str] = []
    tb = raised.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
        if name.startswith(_UNSEEN):
            continue
        if not name.startswith("<"):
            name = os.path.abspath(name)
            if name.startswith(_LIBRARIES):
                continue
        name = name if len(name) <= _MAX_WHERE_PATH else "<a path too long>"
        if name in files:
            files.remove(name)
        files.append(name)
    if len(files) > _MAX_WHERE:  # what is left out could be the code's: it counts as such
        files = ["<more files>", *files[-(_MAX_WHERE - 1) :]]
    return files or [test_file]


_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}
_repeat_spent = 0.0


def _absolute_id(item) -> str:  # type: ignore[no-untyped-def]
    """The test's id with its file absolute and resolved, as ``_REPEAT`` names it."""
    file, sep, rest = item.nodeid.partition("::")
    return _real_id(os.path.join(str(item.config.rootpath), file) + sep + rest)


def _outcome(reports) -> str:  # type: ignore[no-untyped-def]
    """One run's outcome as the judge reads the records (runners/results.py): each phase's,
    a setup or teardown failure an error, the worst of them."""
    worst = None
    for report in reports:
        outcome = _report_outcome(report)
        if report.when != "call":
            outcome = {"failed": "error"}.get(outcome, outcome)
            if outcome == "passed" and worst is not None:
                continue
        if worst is None or _RANK.get(outcome, 4) >= _RANK.get(worst, 4):
            worst = outcome
    return worst or "failed"


def _report_outcome(report) -> str:  # type: ignore[no-untyped-def]
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed" if report.passed else "failed"
    return str(report.outcome)


def _forget_failed_fixtures(item) -> None:  # type: ignore[no-untyped-def]
    """A fixture that raised keeps its error cached for its scope: drop it, so the next
    run of the test sets it up again (as a new process would)."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        for fixturedef in defs:
            cached = getattr(fixturedef, "cached_result", None)
            if isinstance(cached, tuple) and len(cached) == 3 and cached[2] is not None:
                fixturedef.cached_result = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):  # type: ignore[no-untyped-def]
    """A test the judge reruns: run it again here until its outcome differs from the one
    it had, or the times or the budget are spent; only that last run is reported."""
    global _repeat_spent
    plan = _REPEAT.get(_absolute_id(item)) if _REPEAT else None
    if not plan:
        return None
    import time

    from _pytest.runner import runtestprotocol

    times, expected = int(plan[0]), str(plan[1])
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for done in range(1, max(times, 1) + 1):
        started = time.monotonic()
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        _repeat_spent += time.monotonic() - started
        last = done >= times or _repeat_spent > _REPEAT_BUDGET
        if last or _outcome(reports) != expected:
            break
        _forget_failed_fixtures(item)
    for report in reports:
        report.selfforge_runs = done
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_runtest_logreport(report) -> None:  # type: ignore[no-untyped-def]
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed" if report.passed else "failed"
    message = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr or "")[-500:]
    where = getattr(report, "selfforge_where", None)
    runs = getattr(report, "selfforge_runs", None)
    _send(
        {
            "ev": "test",
            "id": report.nodeid,
            "when": report.when,
            "outcome": outcome,
            "duration": _seconds(report.duration),
            "msg": message[:1000],
            **({"where": where} if isinstance(where, list) else {}),
            **({"runs": runs} if isinstance(runs, int) else {}),
        }
    )


def _seconds(duration: object) -> float | None:
    """pytest's measure of a test, or None (unknown) when the test moved the clock it
    reads: freezegun's frozen perf_counter gives +-1e9 s, a mock may give NaN or a Mock
    that json cannot write (the record, and so the run, would be lost)."""
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        return None
    with contextlib.suppress(OverflowError):
        if math.isfinite(duration):
            return float(duration)
    return None


def pytest_sessionfinish(session, exitstatus) -> None:  # type: ignore[no-untyped-def]
    if getattr(session.config, "workerinput", None) is not None:
        # an xdist worker's coverage: its session's end is the last it runs
        _finish_coverage(getattr(session.config, "selfforge_coverage", None))
    _send(
        {
            "ev": "finish",
            "exitstatus": int(exitstatus),
            "testsfailed": session.testsfailed,
            "collected": session.testscollected,
        }
    )


def pytest_unconfigure(config) -> None:  # type: ignore[no-untyped-def]
    if getattr(config, "workerinput", None) is None:
        _finish_coverage(_COVERAGE)
