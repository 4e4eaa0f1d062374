"""What a baseline on which nothing ran means: a toolchain that does not start, or a
suite of which nothing builds or imports. Each is told in the runner's own words (its
first relevant lines) with the fix, before any model call: a run that went on would
ask the model for a change that no test can judge.

Only a run that reported no test outcome at all is read here: a test's own output may
hold the same words in a suite that runs. A suite that does not build because only its
tests call code not written yet (tests first) is judgeable: the criterion then asks for
the whole crate, package or module once it builds (judge/criterion.py).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
from pathlib import Path

from selfforge.judge.runners import registry
from selfforge.judge.runners.results import WHOLE_SUITE, TestReport

_NOT_ON_PATH = (
    "`{0}` is not on PATH inside the check: install it (or run [checks] setup), "
    "or name its full path in [checks] test"
)
# (what the runner prints, the fix); the first that matches wins. {0} is the pattern's
# first group. Most specific first: each runner's own (judge/runners/), then the generic
# "not found".
_CANNOT_START: tuple[tuple[re.Pattern[str], str], ...] = (
    *registry.unrunnable(),
    (
        re.compile(
            r"^(?:[^:\n]*: )?(?:line )?(?:\d+: )?([\w.+/-]+): (?:command )?not found\s*$|"
            r"^env: ['‘]([^'’]+)['’]: No such file",
            re.M,
        ),
        _NOT_ON_PATH,
    ),
)


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# Words a shell runs itself: never looked up on PATH.
_SHELL_WORDS = {"cd", "export", "set", "source", ".", "exec", "eval", "test", "[", "!",
                "if", "for", "while", "true", "false", "env", "command", "time", "ulimit",
                "umask"}  # fmt: skip


def missing_program(command: str, kind: str) -> str | None:
    """The program ``command`` starts (its first word after VAR=value) when this process's
    PATH has no such program: a check started by an MCP client or CI job with another
    PATH than the one ``init`` saw says which tool is missing and where it is looked for,
    instead of a shell's "not found" among the test output."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    assigned = list(itertools.takewhile(lambda w: _ASSIGNMENT.match(w) is not None, words))
    if any("$(" in w or "`" in w for w in assigned):
        return None  # `d=$(mktemp -d) && ...`: shell syntax whose words shlex cannot tell
    program = words[len(assigned)] if len(assigned) < len(words) else ""
    if not program or program in _SHELL_WORDS or ("/" in program and not program.startswith("/")):
        return None  # a path in the tree is the tree's business
    if shutil.which(program) is not None:
        return None
    path = os.environ.get("PATH", os.defpath)
    return (
        f"the {kind} command `{command}` could not run: {program}: not found on the PATH of "
        f"this process (PATH={path}); install it in the project's venv or set [checks] "
        f"{kind} to its full path"
    )


def cannot_start(output: str, tree: Path | None = None) -> str | None:
    """The runner's words and the fix when its toolchain or tool did not start."""
    for pattern, fix in _CANNOT_START:
        m = pattern.search(output)
        if m is None:
            continue
        groups = [g for g in m.groups() if g]
        if fix is _NOT_ON_PATH and tree is not None and _declared(tree, groups[0]):
            fix = _NOT_INSTALLED
        return f"{_lines_at(output, m.start())}; {fix.format(*groups)}"
    return None


_NOT_INSTALLED = (
    "`{0}` is in package.json but not installed: run `npm install` (or `npm ci`) in the "
    "repository, whose node_modules the check reads (it has no network to fetch them)"
)


def _declared(tree: Path, program: str) -> bool:
    """package.json depends on the package that provides ``program``: ``jest``, or
    ``jest-cli``, or a scoped ``@scope/jest``."""
    try:
        package = json.loads((tree / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    names = [
        name.rsplit("/", 1)[-1]
        for key in ("devDependencies", "dependencies")
        if isinstance(package, dict) and isinstance(package.get(key), dict)
        for name in package[key]
    ]
    return any(name == program or name.startswith(f"{program}-") for name in names)


# A runner that ran and found no test: its own words, and where it looks for tests.
_NO_TESTS = registry.no_tests()


def no_tests(output: str) -> tuple[str, str] | None:
    """What the runner said when it ran no test, and where it looks for them."""
    for pattern, where in _NO_TESTS:
        if m := pattern.search(output):
            return m.group(1).strip(), where
    return None


def _lines_at(output: str, at: int) -> str:
    """The line at ``at``, with rustup's or cargo's ``help:`` line after it."""
    start = output.rfind("\n", 0, at) + 1
    lines = output[start:].splitlines()[:2]
    said = lines[0].strip()[:300]
    if len(lines) > 1 and lines[1].strip().startswith("help:"):
        said += " " + lines[1].strip()[:200]
    return said


_RUST_ERROR = re.compile(r"^error(?:\[E\d+\])?: (?!could not compile)(.*)$", re.M)
_RUST_AT = re.compile(r"^\s*--> (\S+?):(\d+):\d+", re.M)
# A diagnostic's header: an error's, or a warning's (whose place is no error's).
_RUST_HEADER = re.compile(r"^(error|warning)(?:\[\w+\])?: ", re.M)
_GO_AT = re.compile(r"^(?:vet: )?(\S+\.go):(\d+):\d+: (.*)$", re.M)
# `#[cfg(test)]`, or `#[cfg(all(test, feature = "alloc"))]`: code only tests build.
_TEST_CFG = r"#\[cfg\((?:test|all\([^\]]*?(?<!not\()\btest\b[^\]]*?\))\)\]"
_CFG_TEST = re.compile(r"^\s*" + _TEST_CFG, re.M)


def nothing_builds(report: TestReport, output: str, tree: Path) -> str | None:
    """Why nothing of the suite runs, with the fix; None when only tests written before
    their code fail to build or import (what a task is for)."""
    if WHOLE_SUITE in report.collect_errors:
        return _rust(report, output, tree)
    if any(".py" in module for module in report.collect_errors):
        return _python(report, output)
    return _go(report, output)  # its modules are import paths


def _rust(report: TestReport, output: str, tree: Path) -> str | None:
    places = _rust_error_places(output)
    if places and all(_in_rust_tests(tree, path, line) for path, line in places):
        return None
    error = _RUST_ERROR.search(output)
    said = error.group(0).strip() if error else report.collect_errors[WHOLE_SUITE]
    outside = [p for p in places if not _in_rust_tests(tree, *p)]
    where = f" at {outside[0][0]}:{outside[0][1]}" if outside else ""
    return (
        f"the crate does not compile ({said[:300]}{where}); make `cargo test` build on "
        "your branch first: selfforge judges a change by the tests that run before it"
    )


def _rust_error_places(output: str) -> list[tuple[str, int]]:
    """Where each of rustc's errors is (its first ``-->`` line): a warning's place (an
    unused variable in the code) says nothing about what does not build."""
    places = []
    headers = list(_RUST_HEADER.finditer(output))
    for n, header in enumerate(headers):
        if header.group(1) != "error":
            continue
        end = headers[n + 1].start() if n + 1 < len(headers) else len(output)
        if m := _RUST_AT.search(output, header.end(), end):
            places.append((m.group(1), int(m.group(2))))
    return places


def _in_rust_tests(tree: Path, path: str, line: int) -> bool:
    """An integration test or bench, a line under a source file's ``#[cfg(test)]``, or a
    test module in its own file (``src/parser/test.rs``, declared ``#[cfg(test)] mod
    test;``)."""
    from selfforge.repo.treefiles import NotReadable, read_text

    rel = Path(path)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(tree.resolve())
        except (ValueError, OSError):
            return False
    if rel.parts and rel.parts[0] in ("tests", "benches"):
        return True
    if _declared_for_tests(tree, rel):
        return True
    try:
        text = read_text(tree, rel.as_posix())
    except (NotReadable, ValueError):
        return False
    first = _CFG_TEST.search(text)
    return first is not None and line > text.count("\n", 0, first.start()) + 1


def _declared_for_tests(tree: Path, rel: Path) -> bool:
    """Is this source a module its parent declares under ``#[cfg(test)]`` (``mod test;``,
    whatever its name), or inside such a module's folder? Only tests build it."""
    from selfforge.repo.treefiles import NotReadable, read_text

    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "mod":
        parts.pop()
    while len(parts) >= 2:  # a module, then its parent's, up to the crate's root
        name, folder = parts[-1], parts[:-1]
        parents = [(*folder, "mod.rs"), (*folder[:-1], folder[-1] + ".rs")]
        if len(folder) == 1:
            parents += [(*folder, "lib.rs"), (*folder, "main.rs")]
        declared = re.compile(
            _TEST_CFG
            + r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+"
            + re.escape(name)
            + r"\s*;"
        )
        for parent in parents:
            try:
                text = read_text(tree, "/".join(parent))
            except (NotReadable, ValueError):
                continue
            if declared.search(text):
                return True
        parts = folder
    return False


def _go(report: TestReport, output: str) -> str | None:
    places = list(_GO_AT.finditer(output))
    if places and all(m.group(1).endswith("_test.go") for m in places):
        return None
    said = places[0].group(0).strip() if places else next(iter(report.collect_errors.values()))
    count = len(report.collect_errors)
    which = "the package does" if count == 1 else f"none of the {count} packages does"
    return (
        f"{which} not build ({said[:300]}); make `go test` build on your branch first: "
        "selfforge judges a change by the tests that run before it"
    )


_PY_ERROR = re.compile(r"^E\s+(\w*(?:Error|Exception)\b.*)$", re.M)


def _python(report: TestReport, output: str) -> str | None:
    # pytest's `E` lines; unittest's report holds the error that stopped each module
    errors = [m.group(1).strip() for m in _PY_ERROR.finditer(output)]
    errors = errors or list(report.collect_errors.values())
    if errors and all("cannot import name" in e for e in errors):
        return None  # the tests ask for names the code has not yet
    module, first = next(iter(report.collect_errors.items()))
    said = errors[0] if errors else first
    return (
        f"every test module fails to import ({module}: {said[:300]}); install what the "
        "tests import where the test command runs, or fix [checks] test in selfforge.toml"
    )
