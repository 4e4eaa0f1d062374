"""Per-test results: what the judge reads (``TestReport``), made from the records that
arrive through the channel (channel.py) or read from ``unittest -v`` output.

For pytest, selfforge's plugin (``inject/selfforge_judge_results.py``) sends a record per
test over a Unix socket that this process listens on while the check runs; nothing the
code under test writes to disk afterwards can change them. For ``unittest -v`` the
outcomes are read from the output (and must agree with the exit code).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.judge.runners.coverage import Lines

PLUGIN = "selfforge_judge_results"
PROBES = "selfforge_line_probes"  # the plugin's line coverage, beside it
PLUGIN_DIR = Path(__file__).parent / "inject"
NODE_REPORTER = "selfforge_node_reporter.mjs"  # for Node's test runner (runners/node.py)
INSIDE_DIR = "/tmp/.selfforge-judge"  # where the channel appears inside the sandbox
# Outcomes that count as a failing test; xfailed is an expected failure, not one.
FAILING = frozenset({"failed", "error"})
# The one ranking of a test's outcomes, best first: a test reported twice keeps its worst.
OUTCOME_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}


@dataclass
class TestReport:
    """Outcomes per test id: passed, failed, error, skipped, xfailed, xpassed."""

    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    collect_errors: dict[str, str] = field(default_factory=dict)  # module → message
    started: bool = True  # the runner reported it started (pytest: the plugin connected)
    finished: bool = True  # ...and reached its end
    exitstatus: int | None = None  # the runner's own status (pytest), when it said
    imports: dict[str, str | None] = field(default_factory=dict)  # module → file it loads
    stop_early_requested: bool = False
    channel_problem: str | None = None  # the results channel was attacked or overflowed
    # pytest: a skipped or xfailed test → the tree's files its skip passed through, the
    # raiser last (a mark's: the test's file); "<...>" for code that is no file
    skip_origins: dict[str, list[str]] = field(default_factory=dict)
    # pytest: a module (or class) skipped as it was collected → where that skip came from
    skipped_modules: dict[str, list[str]] = field(default_factory=dict)
    # the changed code's lines the run executed, where the judge asked and the runner
    # measures them (judge/coverage.py); never part of the outcomes
    coverage: Lines | None = None
    # pytest: a test the run itself ran again (a flaky rerun's ``repeat``) → how many
    # times it ran there; its outcome is the last run's
    runs: dict[str, int] = field(default_factory=dict)
    # the outcomes were read from the runner's printed output (``unittest -v``'s), not
    # from a plugin of selfforge's: nothing of the run was measured
    from_output: bool = False

    @property
    def passed(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == "passed"}

    @property
    def failing(self) -> set[str]:
        """Failing tests, counting each module that could not be collected as one."""
        failing = {t for t, o in self.outcomes.items() if o in FAILING}
        return failing | {collect_id(m) for m in self.collect_errors}

    @property
    def collected(self) -> int:
        """How many tests ran, a JavaScript ``describe`` block's own entry aside
        (``a.spec.ts::block`` beside ``a.spec.ts::block > test``): Vitest reports one only
        while a hook in it fails, and it is gone when the block passes."""
        return len(self.outcomes) - len(blocks(self.outcomes))

    def outcome(self, test: str) -> str | None:
        """A test's outcome; a module's collection id (``m.py::<collection>``) is
        "error" while it fails to import, and once it imports, "passed" when every test
        it holds ran without failing (a new feature with its tests, written tests first)."""
        if test in self.outcomes:
            return self.outcomes[test]
        module = test.split("::")[0]
        if module in self.collect_errors or WHOLE_SUITE in self.collect_errors:
            return "error"
        if test != collect_id(module):
            return None
        held = [
            o
            for t, o in self.outcomes.items()
            if (module == WHOLE_SUITE and not t.startswith(DOCTESTS)) or t.split("::")[0] == module
        ]
        if not held:
            return None
        # skipped and xfailed tests say nothing against it; one failing test does
        return "failed" if any(o in FAILING for o in held) else "passed"

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        if self.collect_errors:
            counts["collection errors"] = len(self.collect_errors)
        return counts


# The collection error of a suite that did not build at all (a Rust crate that does not
# compile): it stands for every test, and once the suite builds it passes when every
# test does.
WHOLE_SUITE = "<crate>"
# ... except its doctests, examples in the documentation that a newer toolchain often
# fails to compile all along (xmlparser's, at every commit): only named ones count.
DOCTESTS = "doc::"


def blocks(outcomes: dict[str, str]) -> set[str]:
    """The ids that are a suite holding other ids (``f::block`` of ``f::block > test``)."""
    held = set()
    for test in outcomes:
        parts = test.split(" > ")
        held.update(" > ".join(parts[:end]) for end in range(1, len(parts)))
    return held & set(outcomes)


def worst(outcomes: list[str]) -> str:
    """The worst of some outcomes (an unknown one counts as an error)."""
    return max(outcomes, key=lambda o: OUTCOME_RANK.get(o, 4))


def collect_id(module: str) -> str:
    """The test id a module that fails to collect counts as."""
    return f"{module}::<collection>"


def report_from_records(records: list[dict], root: Path) -> TestReport | None:
    starts = [r for r in records if r.get("ev") == "start"]
    if not starts:
        return None
    report = TestReport(started=True, finished=False)
    prefix = _node_prefix(Path(str(starts[0].get("rootdir", root))), root)
    report.imports = dict(starts[0].get("imports") or {})
    report.stop_early_requested = any(s.get("stop_early_requested") for s in starts)
    finishes = [r for r in records if r.get("ev") == "finish"]
    # Every session that started must finish; the worst status is the run's.
    report.finished = len(finishes) >= len(starts)
    if finishes:
        report.exitstatus = max(int(f.get("exitstatus", 0)) for f in finishes)
    unknown: set[str] = set()  # tests with a phase of unknown duration
    for r in records:
        ev = r.get("ev")
        if ev == "collect_error":
            module = prefix + str(r.get("id") or "")
            report.collect_errors[module] = _first_line(str(r.get("msg", "")))
        elif ev == "collect_skip":
            module = prefix + str(r.get("id") or "")
            report.skipped_modules[module] = in_tree(list(r.get("where") or []), root)
        elif ev == "test":
            test = prefix + str(r.get("id", ""))
            outcome = str(r.get("outcome", "failed"))
            if r.get("when") != "call":  # a setup/teardown problem is an error
                outcome = {"failed": "error", "passed": "passed"}.get(outcome, outcome)
                if outcome == "passed" and test in report.outcomes:
                    continue
            previous = report.outcomes.get(test)
            # A test reported twice keeps its worst outcome: a forged "passed" line cannot
            # hide a real failure.
            if previous is None or OUTCOME_RANK.get(outcome, 4) >= OUTCOME_RANK.get(previous, 4):
                report.outcomes[test] = outcome
            _add_duration(report, unknown, test, r.get("duration"))
            if outcome in ("skipped", "xfailed") and isinstance(r.get("where"), list):
                origins = report.skip_origins.setdefault(test, [])
                origins += [p for p in in_tree(r["where"], root) if p not in origins]
            if r.get("msg"):
                report.messages[test] = _first_line(str(r["msg"]))
            if isinstance(r.get("runs"), int) and r["runs"] > 0:
                report.runs[test] = max(report.runs.get(test, 0), int(r["runs"]))
    return report


def _add_duration(report: TestReport, unknown: set[str], test: str, secs: object) -> None:
    """A test's phases add up; one phase of unknown length (a clock the test froze or
    mocked: the channel made it None) leaves the test out of ``durations``, so what
    chooses by time (the focused first pass) does not count it as free or as years."""
    if test in unknown:
        return
    if not isinstance(secs, int | float):
        unknown.add(test)
        report.durations.pop(test, None)
        return
    report.durations[test] = report.durations.get(test, 0.0) + float(secs)


def in_tree(paths: list[str], root: Path) -> list[str]:
    """Absolute paths made relative to the tree; one outside it (an installed library, a
    folder on PYTHONPATH) is no code a change holds and is left out; "<...>" stays."""
    roots = {root.resolve(), root.absolute()}
    kept = []
    for path in paths:
        if path.startswith("<"):
            kept.append(path)
            continue
        for top in roots:
            with contextlib.suppress(ValueError):
                kept.append(Path(os.path.normpath(path)).relative_to(top).as_posix())
                break
    return kept


def _node_prefix(rootdir: Path, root: Path) -> str:
    """Node ids are relative to pytest's rootdir; ours to the tree's root."""
    try:
        rel = rootdir.resolve().relative_to(root.resolve())
    except ValueError:
        return ""
    return "" if str(rel) == "." else f"{rel.as_posix()}/"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:500]
    return ""


# --- unittest -v --------------------------------------------------------------------------

_UNITTEST_LINE = re.compile(
    r"^(?P<name>\w+) \((?P<where>[\w.]+)\)[^\n]*?(?:\n[^\n]*?)?\s\.\.\.\s"
    r"(?P<status>ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
    re.M,
)
_UNITTEST_BLOCK = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>[\w.]+) \((?P<where>[\w.]+)\)", re.M)
# A test module unittest could not load stands in its results as a test of this class.
_UNLOADED = "unittest.loader._FailedTest"
_NONE_RAN = re.compile(r"^Ran 0 tests\b", re.M)
_UNITTEST_STATUS = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "skipped": "skipped",
    "expected failure": "xfailed",
    "unexpected success": "failed",
}


def parse_unittest(output: str) -> TestReport | None:
    """Per-test outcomes from ``python -m unittest -v`` output (a module it could not load
    as a collection error, as pytest reports one); None if it has none."""
    report = TestReport(from_output=True)
    for m in _UNITTEST_LINE.finditer(output):
        where = m["where"]
        test_id = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
        if not where.startswith(_UNLOADED):
            report.outcomes[test_id] = _UNITTEST_STATUS[m["status"]]
    blocks = list(_UNITTEST_BLOCK.finditer(output))
    if not report.outcomes and not any(m["where"].startswith(_UNLOADED) for m in blocks):
        # "Ran 0 tests": a run that found nothing is an empty report, not a runner unknown
        return TestReport(from_output=True) if _NONE_RAN.search(output) else None
    for i, m in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(output)
        body = [ln for ln in output[m.end() : end].splitlines() if ln.strip() and ln[0] != " "]
        body = [
            ln
            for ln in body
            if not ln.startswith(("---", "===", "Traceback", "Ran ", "FAILED", "OK"))
        ]
        where = m["where"]
        message = body[-1][:300] if body else "fails to import"
        if where.startswith(_UNLOADED):  # as pytest says it: the module's file, collected
            report.collect_errors[m["name"].replace(".", "/") + ".py"] = message
            continue
        test_id = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
        if body:
            report.messages[test_id] = message
    return report


# --- ids that differ between two runs of the same test -----------------------------------


def param_slots(ids: list[str]) -> dict[str, tuple[str, int, int]]:
    """Each parametrized id's slot: its function (``path::func``), its rank among that
    function's parametrized ids in the order given (collection order), and how many the
    function has."""
    ranks: dict[str, list[str]] = {}
    for test in ids:
        if test.endswith("]") and "[" in test:
            ranks.setdefault(test.split("[", 1)[0], []).append(test)
    return {t: (func, n, len(held)) for func, held in ranks.items() for n, t in enumerate(held)}


def realign(then: list[str], now: list[str]) -> dict[str, str]:
    """The id in ``now`` that each id of ``then`` missing from ``now`` has become: a
    parameter whose id embeds the date and time of the run (``test_x[2026-11-26
    12:00:01.123]``) never has the same id twice, so the same test is known by its slot
    instead — its function and its rank among that function's parametrized ids, when both
    runs hold as many of them and the id in that slot is new in ``now``. A case a change
    removed (fewer ids) or renamed to one ``then`` already had maps to nothing."""
    old, new = set(then), set(now)
    by_slot = {slot: t for t, slot in param_slots(now).items() if t not in old}
    return {
        t: by_slot[slot]
        for t, slot in param_slots(then).items()
        if t not in new and slot in by_slot
    }
