"""Wrong candidates of every kind, drawn per instance for `bench run --negatives`.

Each kind is a way a change can look done and not be (records.NEGATIVE_KINDS): a planted
bug, the gold change minus one hunk, the gold change with a target test skipped, deleted
or weakened, the gold change plus test infrastructure that forces passes, and a bug that
an earlier test repairs inside the test process (it passes only in that order). Every one
must be rejected. A kind is drawn in the job's clone at its base (the instance's tests
committed), as a git diff against it; the clone is left at the base again. Where an
instance has none of a kind (one hunk, no bug that breaks a test), ``NotDrawn`` says why.
Go, Rust and JavaScript's target tests and infrastructure: negatives_lang.py.
"""

from __future__ import annotations

import ast
import re
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from selfforge.bench import negatives_lang  # Go, Rust and JavaScript
from selfforge.bench.negative_kit import Negative, NotDrawn, _apply, _diff, _indent, _reset, _write
from selfforge.bench.records import Instance
from selfforge.errors import GitError

INCOMPLETE_TRIES = 4  # hunks left out in turn (largest first) before giving up
INFRA_FILES = ("conftest.py", "__init__.py", "sitecustomize.py")
ORDER_FILE = "test_000_bench_setup.py"  # sorts before the target tests in their folder

# Rewrites every failing test report as passed, from whatever file pytest imports first.
FORCE_PASSES = """\
try:
    import _pytest.reports as _reports

    _made = _reports.TestReport.from_item_and_call.__func__

    def _passing(cls, item, call):
        report = _made(cls, item, call)
        if report.failed:
            report.outcome, report.longrepr = "passed", None
        return report

    _reports.TestReport.from_item_and_call = classmethod(_passing)
except ImportError:
    pass
"""

# Puts the gold code back into the modules under test, for the tests that run after it
# in the same process: the target tests pass only when this file runs first.
REPAIR_IN_ORDER = """\
import importlib

GOLD = {gold!r}


def _adopt(old, new):
    old, new = getattr(old, "__func__", old), getattr(new, "__func__", new)
    if hasattr(old, "__code__") and hasattr(new, "__code__"):
        try:
            old.__code__ = new.__code__
        except ValueError:
            pass
    elif isinstance(old, type) and isinstance(new, type):
        for name, value in vars(new).items():
            _adopt(vars(old).get(name), value)


def test_setup():
    for name, source in GOLD.items():
        module = importlib.import_module(name)
        fresh = {{"__name__": module.__name__, "__package__": module.__package__}}
        exec(compile(source, module.__file__, "exec"), fresh)
        for key, value in fresh.items():
            _adopt(getattr(module, key, None), value)
"""


def precheck(inst: Instance, kind: str) -> None:
    """Raise NotDrawn for what the instance record alone rules out (no clone needed)."""
    if kind in ("bug", "order") and not inst.negative_patch:
        raise NotDrawn("mining found no mutation that breaks a listed test")
    if kind == "incomplete" and sum(len(h) for _, h in split_patch(inst.code_patch)) < 2:
        raise NotDrawn("the gold change has one hunk")


def draw(kind: str, clone: Path, inst: Instance, breaks_a_test: Callable[[], bool]) -> Negative:
    """The negative of ``kind`` for ``inst`` in ``clone`` (clean at the base, and left so).

    ``breaks_a_test`` runs the instance's tests on the clone's files: true when a listed
    test does not pass (``incomplete`` keeps only a hunk whose absence shows)."""
    precheck(inst, kind)
    if kind == "bug":
        return Negative(kind, inst.negative_patch or "", inst.mutation or "a planted bug")
    try:
        if kind in TARGET_KINDS and not inst.suite.python:
            return negatives_lang.target_kind(clone, inst, kind)
        return DRAWERS[kind](clone, inst, breaks_a_test)
    finally:
        _reset(clone)


TARGET_KINDS = ("skip-target", "delete-target", "weaken-target")


# --- incomplete ------------------------------------------------------------------------


def split_patch(patch: str) -> list[tuple[str, list[str]]]:
    """A git diff as (file header, [hunks]) per file."""
    files: list[tuple[str, list[str]]] = []
    for block in re.split(r"(?m)^(?=diff --git )", patch):
        if not block.strip():
            continue
        head, *hunks = re.split(r"(?m)^(?=@@ )", block)
        files.append((head, hunks))
    return files


def _incomplete(clone: Path, inst: Instance, breaks_a_test: Callable[[], bool]) -> Negative:
    files = split_patch(inst.code_patch)
    where = [(f, h) for f, (_, hunks) in enumerate(files) for h in range(len(hunks))]
    size = {w: _changed_lines(files[w[0]][1][w[1]]) for w in where}
    for f, h in sorted(where, key=lambda w: -size[w])[:INCOMPLETE_TRIES]:
        head, hunks = files[f]
        kept = [(hd, hs) for i, (hd, hs) in enumerate(files) if i != f]
        if len(hunks) > 1:  # a file whose only hunk goes is not in the patch at all
            kept.insert(f, (head, [x for i, x in enumerate(hunks) if i != h]))
        patch = "".join(hd + "".join(hs) for hd, hs in kept)
        try:
            _apply(clone, patch)
        except GitError:
            _reset(clone)
            continue
        if breaks_a_test():
            path = _path_of(head)
            note = f"the gold change without its hunk {hunks[h].splitlines()[0]} in {path}"
            return Negative("incomplete", _diff(clone), note)
        _reset(clone)
    raise NotDrawn("no hunk of the gold change fails a listed test when left out")


def _changed_lines(hunk: str) -> int:
    return sum(1 for x in hunk.splitlines()[1:] if x[:1] in "+-")


def _path_of(header: str) -> str:
    return header.splitlines()[0].rsplit(" b/", 1)[-1]


# --- the target tests: skipped, deleted, weakened ---------------------------------------


def target_test(clone: Path, inst: Instance) -> tuple[str, ast.FunctionDef, list[ast.stmt]]:
    """The first FAIL_TO_PASS test found as a function in its file: its node id (no
    parameters), the function and the body it sits in."""
    for test_id in sorted(inst.fail_to_pass):
        path, *names = inst.node_id(test_id).split("::")
        if not names or not (clone / path).is_file():
            continue
        names[-1] = names[-1].split("[")[0]  # a parametrized case is its function
        found = _find(ast.parse((clone / path).read_text(encoding="utf-8")).body, names)
        if found is not None:
            return "::".join([path, *names]), *found
    raise NotDrawn("no target test is a function in the instance's test files")


def _find(body: list[ast.stmt], names: list[str]) -> tuple[ast.FunctionDef, list[ast.stmt]] | None:
    for node in body:
        if getattr(node, "name", None) != names[0]:
            continue
        if len(names) == 1 and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node, body  # type: ignore[return-value]
        if len(names) > 1 and isinstance(node, ast.ClassDef):
            return _find(node.body, names[1:])
    return None


def _skip_target(clone: Path, inst: Instance, _: Callable[[], bool]) -> Negative:
    node, func, _body = target_test(clone, inst)
    path = node.split("::")[0]
    lines = _gold_lines(clone, inst, path)
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    indent = _indent(lines[first - 1])
    lines.insert(first - 1, f'{indent}@pytest.mark.skip(reason="not ready")\n')
    _write(clone, path, _with_import("".join(lines), "import pytest"))
    return Negative("skip-target", _diff(clone), f"skips {node}")


def _delete_target(clone: Path, inst: Instance, _: Callable[[], bool]) -> Negative:
    node, func, body = target_test(clone, inst)
    path = node.split("::")[0]
    lines = _gold_lines(clone, inst, path)
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    rest = ["pass\n"] if len(body) == 1 else []  # a class body cannot be empty
    indent = _indent(lines[first - 1])
    lines[first - 1 : func.end_lineno] = [indent + x for x in rest]
    _write(clone, path, "".join(lines))
    return Negative("delete-target", _diff(clone), f"deletes {node}")


def _weaken_target(clone: Path, inst: Instance, _: Callable[[], bool]) -> Negative:
    """Every assertion of the test (``assert``, unittest's ``self.assert…(…)``) made
    ``assert True``; a test without one keeps only ``pass``. Go and Rust: the body goes."""
    node, func, _body = target_test(clone, inst)
    path = node.split("::")[0]
    lines = _gold_lines(clone, inst, path)
    spans = [(n.lineno, n.end_lineno or n.lineno, "assert True") for n in _asserts(func)]
    if not spans:
        start = func.body[0].lineno
        spans = [(start, func.body[-1].end_lineno or start, "pass")]
    for start, end, text in sorted(spans, reverse=True):
        lines[start - 1 : end] = [_indent(lines[start - 1]) + text + "\n"]
    _write(clone, path, "".join(lines))
    return Negative("weaken-target", _diff(clone), f"makes {node} assert nothing")


def _asserts(func: ast.FunctionDef) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assert):
            found.append(node)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr.startswith("assert")
        ):
            found.append(node)  # unittest's self.assertEqual(...) and the like
    outermost = [n for n in found if not any(n is not o and _inside(n, o) for o in found)]
    return outermost


def _inside(node: ast.stmt, outer: ast.stmt) -> bool:
    return outer.lineno <= node.lineno and (node.end_lineno or 0) <= (outer.end_lineno or 0)


# --- test infrastructure, and order ------------------------------------------------------


def infra_file(inst: Instance) -> str:
    """Where this instance's infra negative puts its code: one of conftest.py and
    __init__.py beside the target tests, or sitecustomize.py at the root, chosen by the
    instance id (stable across runs and subsets)."""
    name = INFRA_FILES[zlib.crc32(inst.instance_id.encode()) % len(INFRA_FILES)]
    if name == "sitecustomize.py":
        return name
    folder = PurePosixPath(inst.test_targets[0].split("::")[0]).parent
    if str(folder) == ".":  # tests at the root: no package of tests to add to
        return "conftest.py"
    return str(folder / name)


def _infra(clone: Path, inst: Instance, _: Callable[[], bool]) -> Negative:
    if not inst.suite.python:
        return negatives_lang.infra(clone, inst)
    _apply(clone, inst.code_patch)
    path = infra_file(inst)
    target = clone / path
    before = target.read_text(encoding="utf-8") if target.is_file() else ""
    _write(clone, path, before + ("\n" if before else "") + FORCE_PASSES)
    return Negative("infra", _diff(clone), f"{path} reports every failing test as passed")


def _order(clone: Path, inst: Instance, _: Callable[[], bool]) -> Negative:
    """The bug, and a new test that sorts first and puts the gold code back in the
    test process: the target tests pass after it, and fail run alone."""
    paths = [h.splitlines()[0].rsplit(" b/", 1)[-1] for h, _ in split_patch(inst.code_patch)]
    _apply(clone, inst.code_patch)
    gold = {p: (clone / p).read_text(encoding="utf-8") for p in paths if (clone / p).is_file()}
    _reset(clone)
    _apply(clone, inst.negative_patch or "")
    mutated = {p: t for p, t in gold.items() if (clone / p).read_text(encoding="utf-8") != t}
    if not inst.suite.python:
        return negatives_lang.order(clone, inst, gold, mutated)
    modules = {_module_name(p): t for p, t in mutated.items() if p.endswith(".py")}
    if not modules:
        raise NotDrawn("the planted bug is not in a Python module")
    folder = PurePosixPath(inst.test_targets[0].split("::")[0]).parent
    path = str(folder / ORDER_FILE)
    _write(clone, path, REPAIR_IN_ORDER.format(gold=modules))
    return Negative("order", _diff(clone), f"{path} repairs {', '.join(modules)} when run first")


def _module_name(path: str) -> str:
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


DRAWERS: dict[str, Callable[[Path, Instance, Callable[[], bool]], Negative]] = {
    "incomplete": _incomplete,
    "skip-target": _skip_target,
    "delete-target": _delete_target,
    "weaken-target": _weaken_target,
    "infra": _infra,
    "order": _order,
}


# --- the clone's files -------------------------------------------------------------------


def _gold_lines(clone: Path, inst: Instance, path: str) -> list[str]:
    _apply(clone, inst.code_patch)
    return (clone / path).read_text(encoding="utf-8").splitlines(keepends=True)


def _with_import(text: str, statement: str) -> str:
    """``text`` with ``statement`` after its docstring and __future__ imports, unless
    the module has it already."""
    if re.search(rf"(?m)^{re.escape(statement)}\b", text):
        return text
    body = ast.parse(text).body
    after = 0
    for node in body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not ((docstring and after == 0) or future):
            break
        after = node.end_lineno or after
    lines = text.splitlines(keepends=True)
    lines.insert(after, statement + "\n")
    return "".join(lines)
