"""The suites of the nested modules a change touches (``[checks] modules``).

A repository may hold modules the root's test command never enters: a nested ``go.mod``
(``go test ./...`` stops at its boundary, from a ``go.work``'s root too), a crate that is
no member of the workspace, an npm workspace package, a Python package with its own
tests. A file belongs to the deepest module folder that holds it. For each module the
change touches whose suite the test command does not run already (a workspace member of
a run that tests the workspace, or a module some test of the base's run lies in), its
suite runs in its folder with the runner's per-module command (``go test ./...``,
``cargo test --offline``, ``npm test``; Python: the test command itself), as the root's
does: the base's run first (kept in the baseline cache, keyed by the module), then the
judged commit's (the contract's: the base's tests on the change's code), the flaky
reruns, the same regression gates, then the change's own suite. Steps are journaled as
``baseline:tests[DIR]``, ``tests[DIR]``, ``tests:new[DIR]``. A module whose suite runs no
test on the base (it does not build there, a dependency is missing, it has none) is not
judged: the change needs review, naming the module, why and the files no test judged; a
module the change adds must pass whole; a change that deletes files counts the base's
modules too (its tests gone, a package is still one).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace

from selfforge.judge import baseline as judge_baseline
from selfforge.judge import contract, gates
from selfforge.judge.candidate import Candidate, Judge
from selfforge.judge.flaky import mark_flaky
from selfforge.judge.runners import registry
from selfforge.judge.runners.base import Adapter, Module
from selfforge.judge.suite_runs import restore, run_test_command, summary_text
from selfforge.judge.verdict import PASS, Criterion, Observed, Verdict
from selfforge.repo import git

Declared = Callable[[Candidate, Judge, Adapter], frozenset[str]]


@dataclass(frozen=True)
class ModuleChecks:
    """What decides a module's baseline besides the tree: its cache key's checks."""

    module: str
    test: str
    timeout_s: float


def touched(c: Candidate, j: Judge) -> list[Module]:
    """The modules the change touches (a changed file's deepest module), whose suite the
    test command does not run already."""
    command = j.directives.checks.test
    if not command:
        return []
    adapter = registry.for_space(j.space, command, c.tree)
    report = j.baseline.tests
    listed, near = j.directives.checks.modules, list(c.changed)
    found = registry.modules(adapter, command, c.tree, listed, report, near=near)
    if any(status[:1] in ("D", "R") for status in c.changed.values()):
        # a change that deletes files may unmake a module (its tests gone): the modules
        # of the base count too
        restore(c.tree, c.base)
        try:
            before = registry.modules(adapter, command, c.tree, listed, report, near=near)
        finally:
            restore(c.tree, c.commit)
        known = {m.dir for m in found}
        found += [m for m in before if m.dir not in known]
    return found


def judge_modules(c: Candidate, j: Judge, declared: Declared) -> Verdict:
    """Each touched module's suite judges the change as the root's judges it; the first
    that refuses is the verdict (its reason names the module)."""
    review: list[str] = []
    judged: contract.Judged | None = None  # made once, for the first module that runs
    for module in touched(c, j):
        name = f"tests[{module.dir}]"
        if module.covered:
            j.record.step(name, True, f"run by the test command: {module.covered}")
            continue
        if judged is None:
            judged = contract.judged_commit(c.tree, c.base, c.commit, c.changed, j.rule)
        verdict = _judge_one(c, j, module, judged, declared)
        if not verdict.ok:
            return replace(verdict, reason=f"module {module.dir}: {verdict.reason}")
        review.extend(verdict.review)
    return PASS.noting(review)


def _judge_one(
    c: Candidate, j: Judge, module: Module, judged: contract.Judged, declared: Declared
) -> Verdict:
    command = f"cd {shlex.quote(module.dir)} && {module.command}"
    adapter = registry.detect(module.command, c.tree / module.dir, j.space.runner, j.space.junit)
    jm = replace(j, space=dataclasses.replace(j.space, adapter=adapter))
    name = f"tests[{module.dir}]"
    if not _at_base(c, module, registry.by_name(module.runner).module_files):
        return _new_module(c, jm, name, command)
    base = _baseline(c, jm, module, command)
    if base.tests is None or not (base.tests.collected or base.tests.collect_errors):
        said = "no per-test results" if base.tests is None else "no test"
        j.record.step(name, True, f"not judged: its suite ran {said} on the base")
        return PASS.noting([_unjudged(c, module, said, base)])
    jm = replace(jm, baseline=base)
    result, report = run_test_command(c, jm, name, command, commit=judged.commit)
    seen = Observed(tests=report, tests_result=result, own_tests=report)
    if adapter.reruns() and report is not None and gates.run_gate(result, report).ok:
        seen.flaky = mark_flaky(c, jm, command, report, commit=judged.commit)
    excused = declared(c, jm, adapter)
    verdict = gates.tests_gate(base, seen, Criterion("tests"), excused=excused, diff=c.diff)
    j.record.step(name, verdict.ok, summary_text(report, result, verdict), result=result)
    if verdict.ok and not judged.is_candidate:
        own_name = f"tests:new[{module.dir}]"
        own_result, own = run_test_command(c, jm, own_name, command)
        verdict = gates.own_suite_gate(
            base,
            report,
            own,
            own_result,
            person=j.person,
            declared=excused,
            flaky=base.flaky | seen.flaky,
        )
        j.record.step(own_name, verdict.ok, summary_text(own, own_result), result=own_result)
    if verdict.ok and excused:
        shown = ", ".join(sorted(excused)[:10])
        verdict = verdict.noting(["declares a change of tested behaviour: " + shown])
    return verdict


def _unjudged(c: Candidate, module: Module, said: str, base: Observed) -> str:
    """The review line for a touched module whose suite judged nothing on the base (it
    does not build there, its dependencies are missing, it has no test): no test ran
    the change's files in it, which a person must know, never an acceptance unsaid."""
    inside = sorted(p for p in c.changed if p.startswith(module.dir + "/"))
    files = ", ".join(inside[:3]) + (f" and {len(inside) - 3} more" if len(inside) > 3 else "")
    output = base.tests_result.output if base.tests_result is not None else ""
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    first = next((x for x in lines if not x.startswith("go: downloading")), "")
    why = f" ({first[:200]})" if first and said != "no test" else ""
    return (
        f"module {module.dir}: its suite ran {said} on the base{why}: no test judged "
        f"the change to {files or module.dir}"
    )


def _at_base(c: Candidate, module: Module, markers: tuple[str, ...]) -> bool:
    """Whether the module was one on the base: its folder there, and, when the change
    leaves it a runner's marker (a go.mod, a Cargo.toml, ...), that marker there too (a
    folder the change makes a module is new; a folder [checks] modules names, without
    a marker, is as old as the folder)."""

    def there(path: str) -> bool:
        return git.ok("cat-file", "-e", f"{c.base}:{path}", cwd=c.tree)

    if not there(module.dir):
        return False
    marked = [m for m in markers if (c.tree / module.dir / m).is_file()]
    return not marked or any(there(f"{module.dir}/{m}") for m in marked)


def _baseline(c: Candidate, j: Judge, module: Module, command: str) -> Observed:
    """The module's suite on the base: from the baseline cache (keyed by the module, its
    command and everything the root's key holds), else run now and kept."""
    d = j.directives
    checks = ModuleChecks(module.dir, command, d.checks.timeout_s)
    digest = judge_baseline.cache_key(j.space.repo, c.base, checks, d.sandbox, j.space)
    name = f"baseline:tests[{module.dir}]"
    if (cached := judge_baseline.load_cached(j.state_dir, digest)) is not None:
        j.record.step(name, True, "cached: " + judge_baseline.describe_cached(cached[0]))
        return cached[0]
    result, report = run_test_command(c, j, name, command, commit=c.base)
    observed = Observed(tests=report, tests_result=result)
    j.record.step(name, None, summary_text(report, result), result=result)
    if not result.timed_out and not result.limit:
        judge_baseline.save_cached(j.state_dir, digest, observed)
    return observed


def _new_module(c: Candidate, j: Judge, name: str, command: str) -> Verdict:
    """A module the change adds has no base to compare with: its suite must pass."""
    result, report = run_test_command(c, j, name, command)
    verdict = gates.run_gate(result, report)
    if verdict.ok and report is not None and report.failing:
        failing = sorted(report.failing)
        reason = f"{len(failing)} test(s) fail in a module the change adds: " + ", ".join(
            failing[:3]
        )
        verdict = Verdict(False, reason, f"{reason}\n\nTest output:\n{result.output}", failing)
    elif verdict.ok and result.exit_code != 0:
        reason = f"the suite of a module the change adds fails (exit {result.exit_code})"
        verdict = Verdict(False, reason, f"{reason}:\n{result.output}")
    j.record.step(name, verdict.ok, summary_text(report, result, verdict), result=result)
    return verdict
