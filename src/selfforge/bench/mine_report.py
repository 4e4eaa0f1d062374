"""Why ``bench mine`` passed over commits: a reason per commit that made no instance, the
commonest error message of each reason, and the early stop when the first commits all
fail the same way (a test environment that cannot run the project's tests would
otherwise replay the whole history for nothing)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from selfforge.errors import UsageError

_INSTALL = "install what the tests import in the venv, or pass --test-cmd"


@dataclass(frozen=True)
class Reason:
    says: str  # in the report: "N commit(s) <says>"
    every: str = ""  # in the early stop: "every <every>"; empty: no early stop
    fix: str = ""


# Only reasons that say something about this machine stop mining early: a history may
# well have twenty commits in a row whose tests already passed on their parent.
REASONS = {
    "no_tests": Reason("change no test file together with code (or are the root commit)"),
    "deletes_code": Reason("delete a code file (the gold is not an edit to propose)"),
    "no_test_module": Reason("have no test module left at the commit"),
    "dependencies": Reason("change the dependencies (judged apart, not mined)"),
    "manifest": Reason(
        "change a build manifest the gold cannot carry (Cargo.toml, go.mod, package.json)"
    ),
    "parent_collect": Reason(
        "have tests that fail to collect on the parent", "parent's tests fail to collect", _INSTALL
    ),
    "commit_collect": Reason(
        "have tests that fail to collect on the commit", "commit's tests fail to collect", _INSTALL
    ),
    "pass_before": Reason("have tests that already pass on the parent"),
    "fail_after": Reason(
        "have tests that still fail on the commit",
        "commit's tests fail on the commit itself",
        "check that the tests can run here (dependencies, services, data), or pass --test-cmd",
    ),
    "timeout": Reason(
        "have a test run that did not finish",
        "test run does not finish",
        "raise --timeout, or pass a --test-cmd that runs fewer tests",
    ),
    "ships_failing": Reason("leave tests failing where the parent did not build"),
    "no_code_patch": Reason("change code only in binary or empty ways"),
    "setup": Reason("have dependencies that do not install", "setup fails", "check --setup"),
    "git": Reason("cannot be checked out here", "commit cannot be checked out", "check the clone"),
}


@dataclass(frozen=True)
class Skip:
    """A commit that made no instance: why (a key of REASONS), and the error, if any."""

    reason: str
    detail: str = ""


@dataclass
class Skips:
    """The tally: reason -> how often each error message came with it."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, skip: Skip, times: int = 1) -> None:
        self.counts.setdefault(skip.reason, Counter())[skip.detail] += times

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def lines(self) -> list[str]:
        """One line per reason, commonest first, with its commonest error message."""
        rows = sorted(self.counts.items(), key=lambda kv: -sum(kv[1].values()))
        out = []
        for reason, details in rows:
            line = f"{sum(details.values()):>5}  {REASONS[reason].says}"
            common = [(d, n) for d, n in details.most_common() if d]
            if common:
                line += f" (commonest: {common[0][0]}, {common[0][1]}×)"
            out.append(line)
        return out


def early_stop(first: list[Skip], n: int) -> None:
    """Raise when the first ``n`` commits all failed the same way, for a reason that
    says this machine cannot run the tests."""
    if n <= 0 or len(first) < n or len(set(first[:n])) != 1:
        return
    skip = first[0]
    reason = REASONS[skip.reason]
    if not reason.every:
        return
    detail = f" ({skip.detail})" if skip.detail else ""
    raise UsageError(f"stopped after {n} commits: every {reason.every}{detail}; {reason.fix}")


_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception)): (\S[^\n]*)")
_PYTEST_E = re.compile(r"(?m)^E\s+(\S[^\n]*)")
_ERROR_LINE = re.compile(r"(?mi)^(?:error\b|fatal\b)[^\n]*")


def error_line(output: str) -> str:
    """The message that says what went wrong in a test run's output: a Python exception
    (``ModuleNotFoundError: No module named 'x'``), else pytest's first ``E`` line, else
    a compiler's first error line, else the last line."""
    for pattern, group in ((_EXCEPTION, 0), (_PYTEST_E, 1), (_ERROR_LINE, 0)):
        m = pattern.search(output)
        if m:
            return m[group].strip()[:160]
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    return lines[-1][:160] if lines else ""


def collection_failed(outcomes: dict[str, str], exit_code: int | None, output: str) -> bool:
    """No test passed, and the runner said it could not collect (or reported nothing)."""
    if any(o == "passed" for o in outcomes.values()):
        return False
    said = "error during collection" in output or "errors during collection" in output
    return said or "ERROR collecting" in output or (not outcomes and exit_code not in (0, None))
