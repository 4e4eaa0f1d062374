"""A person's change that changes tested behaviour on purpose (``selfforge check`` only):
a question for a reviewer, told apart from a change that hides a failure.

The contract runs the base's tests, in their base version, on the change's code
(contract.py). A base test that fails there is a regression — unless the change rewrote
that same test's expectation (a different expected value, message, type or data entry:
rules/test_changes.py) and the test's new version passes in the change's own suite: then
the verdict is needs review, with the base version's failure and the old and new
assertion side by side. Likewise an API change: the base's tests of a module no longer
build against the new code, the change edits those tests, and its own suite builds and
passes them — needs review, naming the first build error and its symbol. Anything else
stays refused: a failing base test the change weakened, skipped, xfailed, focused away
or deleted (said in the rejection), or one it did not touch. ``run`` (a model's proposal)
never gets here: ``Judge.person`` is False.

A red base made green by the change's own list of expected failures: a base test that
failed on the base and fails on the change's code too (its base version) regressed in
nothing; when the change's own suite xfails it (an xfail mark, a list in its conftest or
a data file the suite reads), the verdict is needs review, a line per test: xfailed, how
(rules/test_changes.py), failed on the base too, the same failure or not. An xfail on a
test that passed on the base and fails now stays a regression.

A declaration (``--changes``, the ``Selfforge-Changes:`` trailer) hides nothing either:
the review lists what the change did to each declared test and the counts of tests
before and after.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from selfforge.judge.candidate import Candidate, Judge
from selfforge.judge.gates import is_worse
from selfforge.judge.rules.test_changes import (
    HIDING,
    XFAILED,
    Reader,
    TestChange,
    test_change,
)
from selfforge.judge.runners.base import Adapter
from selfforge.judge.runners.results import TestReport
from selfforge.judge.verdict import PASS, Verdict
from selfforge.repo.testpaths import TestRule

_SHOWN = 5  # tests shown per review item


@dataclass
class Intent:
    """What the change did to the base tests that fail on its code."""

    changes: dict[str, TestChange] = field(default_factory=dict)
    rewritten: frozenset[str] = frozenset()  # failing base tests whose expectation it rewrote
    unbuilt: dict[str, str] = field(default_factory=dict)  # module → its tests' build error
    unbuilt_tests: frozenset[str] = frozenset()  # the base's tests in those modules
    build_errors: dict[str, str] = field(default_factory=dict)  # every module that broke
    tests_only: frozenset[str] = frozenset()  # of those, the ones where a test file fails
    red: frozenset[str] = frozenset()  # base tests failing on the base and on its code
    describe: Callable[[str], TestChange] | None = None  # what the change did to a test

    def expected_failures(self, own: TestReport | None) -> frozenset[str]:
        """The base tests that failed on the base, fail on the change's code too (as the
        base's tests), and that the change's own suite expects to fail (an xfail mark, a
        list its conftest or data reads): nothing regressed, a person reviews what the
        change marked (``confirm``)."""
        if own is None:
            return frozenset()
        return frozenset(t for t in self.red if own.outcome(t) == "xfailed")

    @property
    def excused(self) -> frozenset[str]:
        """What the judged run may show failing or gone: a reviewer looks at it, and the
        change's own suite must pass it (``confirm``)."""
        return self.rewritten | self.unbuilt_tests | frozenset(self.unbuilt)

    def annotate(self, verdict: Verdict) -> Verdict:
        """A rejection naming what the change did to the failing tests it edited."""
        if verdict.ok:
            return verdict
        verdict = self._built(verdict)
        named = [
            ch.describe()
            for t, ch in sorted(self.changes.items())
            if ch.action in HIDING and t not in self.excused and t in verdict.reason
        ]
        if not named:
            return verdict
        note = " — what the change did to it: " + "; ".join(named[:3])
        return replace(verdict, reason=verdict.reason + note, feedback=verdict.feedback + note)

    def _built(self, verdict: Verdict) -> Verdict:
        """A module whose code builds and whose base tests do not build against it is
        said so, with the first error — not "the package does not build"."""
        for module, error in self.build_errors.items():
            if not verdict.reason.startswith(f"the change makes {module} fail to import"):
                continue
            if module in self.tests_only:
                reason = (
                    f"the base's tests of {module} do not build against the change's code: "
                    f"{error} (a change that alters an API updates the tests that use it)"
                )
            else:
                reason = f"the change makes {module} fail to build: {error}"
            return replace(verdict, reason=reason, feedback=f"{reason}\n\n{verdict.feedback}")
        return verdict


def read(
    c: Candidate,
    j: Judge,
    report: TestReport | None,
    adapter: Adapter,
    output: str,
    *,
    partial: bool = False,
    declared: frozenset[str] = frozenset(),
) -> Intent:
    """What the change did to each base test that fails (or no longer builds) on its code
    in the judged run ``report``; for a person's change only. ``partial``: the run ran
    only some tests; ``declared``: tests the change declares (reviewed as such)."""
    base = j.baseline.tests
    if not j.person or report is None or base is None:
        return Intent()
    reader = Reader(c.tree, c.base, c.commit, c.changed)
    broke = sorted(set(report.collect_errors) - set(base.collect_errors))
    errors = {m: _build_error(m, report, adapter, output) for m in broke}
    tests_only = frozenset(m for m, e in errors.items() if _in_test_file(e, j, adapter))
    unbuilt = {m: errors[m] for m in broke if _edits_tests_of(c, j, adapter, m)}
    unbuilt_tests = frozenset(t for t in base.outcomes if t.split("::", 1)[0] in unbuilt)
    regressed = [
        t
        for t, was in sorted(base.outcomes.items())
        if t not in j.baseline.flaky | declared  # a declared test: declared_review
        and t not in unbuilt_tests
        and (not partial or t in report.outcomes)
        and is_worse(was, report.outcome(t))
    ]
    changes = {
        t: test_change(reader, t, adapter.language, j.rule) for t in [*regressed, *unbuilt_tests]
    }
    rewritten = frozenset(t for t in regressed if changes[t].rewritten)
    hiding = [t for t in unbuilt_tests if changes[t].action in HIDING]
    if hiding:  # an API change does not excuse a test it hides
        unbuilt, unbuilt_tests = {}, frozenset()
    built = errors if adapter.build_error else {}  # a toolchain that says where it broke
    red = frozenset(
        t
        for t, was in base.outcomes.items()
        if was in _FAILING and report.outcome(t) in _FAILING and t not in j.baseline.flaky
    )
    return Intent(
        changes,
        rewritten,
        unbuilt,
        unbuilt_tests,
        built,
        tests_only,
        red,
        lambda t: changes.get(t) or test_change(reader, t, adapter.language, j.rule),
    )


_FAILING = ("failed", "error")


def _in_test_file(error: str, j: Judge, adapter: Adapter) -> bool:
    """Is a build error's first location a test file (``./m_test.go:6:11: …``)?"""
    path = error.split(":", 1)[0].removeprefix("./")
    return bool(adapter.build_error) and adapter.test_file(path, j.rule)


def _edits_tests_of(c: Candidate, j: Judge, adapter: Adapter, module: str) -> bool:
    """Does the change edit the test files of ``module`` (a test file, or a Go
    package's folder)?"""
    return _edits_file_of(c, j.rule, adapter, module + "::_")


def _build_error(module: str, report: TestReport, adapter: Adapter, output: str) -> str:
    """The first build error of ``module``'s tests, in the toolchain's words."""
    if adapter.build_error:
        output = _build_output(output)
        header = re.search(rf"(?m)^# {re.escape(module)}(?:\s|$)", output)
        rest = output[header.end() :] if header else output
        if m := re.search(adapter.build_error, rest, re.M):
            return m.group(0).strip()
    return report.collect_errors.get(module, "")


def _build_output(output: str) -> str:
    """The toolchain's build output as plain lines: newer Go prints it as ``-json``
    events (``"Action":"build-output"``), older Go as text."""
    lines = []
    for line in output.splitlines():
        if line.startswith("{") and '"build-output"' in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("Output"), str):
                lines.append(event["Output"].rstrip("\n"))
        else:
            lines.append(line)
    return "\n".join(lines)


def symbol(error: str, adapter: Adapter) -> str:
    """The name a build error is about (``undefined: X``, a call to ``X``)."""
    for pattern in adapter.missing_symbol:
        if m := re.search(pattern, error):
            return m.group(1)
    return ""


def confirm(
    intent: Intent,
    base: TestReport,
    judged: TestReport,
    own: TestReport | None,
    adapter: Adapter,
) -> Verdict:
    """After the change's own suite ran: each rewritten test passes there (or is gone
    with the data entry it checked), the modules whose base tests no longer build build
    and pass; then the review items, else the rejection."""
    xfailed = intent.expected_failures(own)
    if not intent.rewritten and not intent.unbuilt and not xfailed:
        return PASS
    if own is None:
        reason = "the change's own suite gave no per-test results to confirm its rewritten tests"
        return Verdict(False, reason, reason)
    bad = []
    for t in sorted(intent.rewritten | intent.unbuilt_tests):
        mine = own.outcome(t)
        gone_with_data = mine is None and t in intent.rewritten and intent.changes[t].data
        if mine != "passed" and not gone_with_data:
            bad.append(f"{t}: {mine or 'gone'} in the change's own suite")
    bad += [
        f"{m}: its tests do not build in the change's own suite either: {own.collect_errors[m]}"
        for m in intent.unbuilt
        if m in own.collect_errors
    ]
    if bad:
        reason = f"{len(bad)} rewritten test(s) do not pass as rewritten: " + "; ".join(bad[:3])
        return Verdict(False, reason, reason, bad)
    items = []
    if intent.rewritten:
        shown = [_failure(t, judged, intent.changes[t]) for t in sorted(intent.rewritten)]
        more = len(shown) - _SHOWN
        items.append(
            f"changes tested behaviour: {len(shown)} base test(s) fail on the new code and "
            "the change rewrote their expectation: "
            + "; ".join(shown[:_SHOWN])
            + (f"; and {more} more" if more > 0 else "")
            + f" ({counts(base, own)})"
        )
    for module, error in sorted(intent.unbuilt.items()):
        name = symbol(error, adapter)
        tests = [intent.changes[t] for t in sorted(intent.unbuilt_tests) if _in(t, module)]
        edited = [ch.describe() for ch in tests if ch.action != "untouched"]
        items.append(
            f"changes an API{f' ({name})' if name else ''}: the base's tests of {module} no "
            f"longer build against the new code ({error}); the change updates them, and its "
            "own suite builds and passes them: "
            + ("; ".join(edited[:_SHOWN]) or "no test function edited")
            + f" ({counts(base, own)})"
        )
    items += [_expected_failure(t, base, judged, intent) for t in sorted(xfailed)]
    return Verdict(True, PASS.reason, review=items)


def _expected_failure(test: str, base: TestReport, judged: TestReport, intent: Intent) -> str:
    """A review line: a test the change marks as expected to fail, which failed on the
    base already and fails on the change's code too (in its base version)."""
    change = intent.describe(test) if intent.describe is not None else None
    how = f" ({change.how})" if change is not None and change.action == XFAILED else ""
    was = _first_line(base.messages.get(test) or base.outcomes.get(test, ""))
    now = _first_line(judged.messages.get(test) or judged.outcome(test) or "")
    same = (
        f"fails the same way on the new code ({now})"
        if was == now
        else (f"fails on the new code too, differently: {now} (on the base: {was})")
    )
    return (
        f"xfails a test that already failed: {test}: xfailed{how}; failed on the base too; {same}"
    )


def _first_line(message: str) -> str:
    lines = message.strip().splitlines()
    return lines[0][:160] if lines else message


def _in(test: str, module: str) -> bool:
    return test.split("::", 1)[0] == module


def _failure(test: str, judged: TestReport, change: TestChange) -> str:
    message = judged.messages.get(test) or judged.outcome(test) or "not collected"
    first = message.strip().splitlines()[0] if message.strip() else message
    where = f" in {change.how}" if change.how else ""
    return f"{test} fails ({first[:160]}); rewrote{where}: {change.side_by_side()}"


def counts(base: TestReport, after: TestReport | None) -> str:
    return f"tests: {base.collected} before, {after.collected if after else '?'} after"


def declared_review(
    c: Candidate,
    j: Judge,
    declared: frozenset[str],
    judged: TestReport | None,
    own: TestReport | None,
    adapter: Adapter,
    intent: Intent,
) -> str:
    """The review item of a declared change: each declared test, its state in its base
    version, and what the change did to it; the counts of tests before and after."""
    reader = Reader(c.tree, c.base, c.commit, c.changed)
    shown = []
    for t in sorted(declared):
        change = intent.changes.get(t) or test_change(reader, t, adapter.language, j.rule)
        state = judged.outcome(t) if judged is not None else None
        shown.append(f"{change.describe()} ({state or 'not collected'} in its base version)")
    more = len(shown) - 10
    base = j.baseline.tests
    tally = f" ({counts(base, own)})" if base is not None else ""
    return (
        "declares a change of tested behaviour: "
        + "; ".join(shown[:10])
        + (f"; and {more} more" if more > 0 else "")
        + tally
    )


def declared_tests(
    c: Candidate, rule: TestRule, adapter: Adapter, known: Iterable[str]
) -> frozenset[str]:
    """The base's test ids a declaration names: each declared name matches a test id
    exactly, the file or class that holds it, or its last part. A bare name that tests
    of more than one file (or Go package) bear selects those whose test file the change
    edits: the same name elsewhere is another test (``--changes test_x`` selected every
    ``test_x`` of the suite before)."""
    found: set[str] = set()
    for name in c.declared:
        hits = {t for t in known if names_test(name, t)}
        if len({t.split("::", 1)[0] for t in hits}) > 1 and "::" not in name:
            hits = {t for t in hits if _edits_file_of(c, rule, adapter, t)} or hits
        found |= hits
    return frozenset(found)


def names_test(name: str, test: str) -> bool:
    name = name.strip()
    return bool(name) and (
        test == name
        or test.startswith(name + "::")
        or test.endswith(("::" + name, "/" + name))
        or test.split("::")[-1].split("[")[0] == name
    )


def _edits_file_of(c: Candidate, rule: TestRule, adapter: Adapter, test: str) -> bool:
    first = test.split("::", 1)[0]
    if first in c.changed:
        return True
    folder = adapter.owner(test, c.tree)
    return folder is not None and any(
        adapter.test_file(p, rule) and PurePosixPath(p).parent.as_posix() == folder
        for p in c.changed
    )
