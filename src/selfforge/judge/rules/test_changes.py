"""What a change did to one test of the base: left it untouched, rewrote its expectation,
weakened it, skipped it, xfailed it, focused it away, or deleted it.

A person's change (``selfforge check``) that changes what the code does rewrites the
test that pinned the old behaviour: a different expected value, message, exception type
or data entry. That is a question for a reviewer, not a cheat. A change that hides a
failure instead — an assertion removed or loosened, made trivially true, ``t.Fatalf`` →
``t.Logf``, a skip, an xfail, a ``.only`` elsewhere in the file, the test deleted — is
refused. This module tells the two apart, per language:

- Python (``ast``): the test function in its base and new versions (its class, its
  decorators, its ``parametrize`` entries); the checks are ``assert`` statements, calls
  of ``assert*``/``fail*`` methods and ``pytest.raises``/``warns``.
- Go, Rust, JavaScript (test_blocks.py's blocks: ``func TestX``, ``#[test] fn``,
  ``it``/``test``): the block's lines, its failure calls (``t.Fatal*``/``t.Error*``, an
  ``assert*!`` macro, an ``assert``/``expect`` call) and the runners' skip/focus marks
  (runners/registry.py ``weakening``).

Weakened is decided before rewritten: fewer checks than the base had, a check whose
comparison is loosened (``==`` → ``in``, a ``match=`` dropped, ``assertEqual`` →
``assertTrue``, an exception type widened to ``Exception``), one made trivially true, a
``try`` that swallows ``AssertionError``. Anything else that differs rewrote the
expectation; the lines that differ are kept, old and new, for the reviewer.

Data: when the test's own code is untouched, a data file the change edits and the test's
file reads (a file in a test folder or ``testdata/`` that the test file names by file,
stem or folder) is the expectation: its edit is a rewrite (an entry changed, removed or
added, shown old and new) — a removed entry included, which a reviewer sees as removed;
an entry added to a list of tests allowed to fail or be skipped (``xfail``, ``skip``,
``known_failures``…) xfails or skips the test. So does a line the change adds to such a
list that names the test, in a ``conftest.py`` or a data file named for the list, when
the test file does not read it itself (the suite's conftest does).
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfforge.judge.rules.test_blocks import Files, NoTest, block, locate
from selfforge.judge.runners import registry
from selfforge.repo.testpaths import TestRule

UNTOUCHED = "untouched"
REWRITTEN = "rewrote the expectation"
WEAKENED = "weakened"
SKIPPED = "skipped"
XFAILED = "xfailed"
FOCUSED_AWAY = "focused away"
DELETED = "deleted"
HIDING = (WEAKENED, SKIPPED, XFAILED, FOCUSED_AWAY, DELETED)  # never a behaviour change


@dataclass(frozen=True)
class TestChange:
    """What the change did to one base test, with what shows it."""

    test: str
    action: str
    old: tuple[str, ...] = ()  # the base's lines (assertions, data entries) that changed
    new: tuple[str, ...] = ()  # what the change put there
    how: str = ""  # why it counts as weakened, skipped…; or where the expectation is
    data: bool = False  # rewritten in its data or parameters: the case may be gone now

    @property
    def rewritten(self) -> bool:
        return self.action == REWRITTEN

    def side_by_side(self) -> str:
        """``old → new`` (the first lines of each), for a review or a rejection."""
        old = " / ".join(self.old[:3]) or "(nothing)"
        new = " / ".join(self.new[:3]) or "(nothing)"
        return f"`{_cut(old)}` → `{_cut(new)}`"

    def describe(self) -> str:
        if self.action == REWRITTEN:
            where = f" in {self.how}" if self.how else ""
            return f"{self.test}: {REWRITTEN}{where}: {self.side_by_side()}"
        if self.action == UNTOUCHED:
            return f"{self.test}: {UNTOUCHED}"
        return f"{self.test}: {self.action}" + (f" ({self.how})" if self.how else "")


def _cut(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class Reader:
    """A change's files at its base and at its commit (each read once)."""

    def __init__(self, tree: Path, base: str, commit: str, changed: dict[str, str]) -> None:
        self.tree, self.base, self.commit, self.changed = tree, base, commit, changed
        self._files = {base: Files(tree, base), commit: Files(tree, commit)}

    def at(self, rev: str, path: str) -> str | None:
        return self._files[rev].read(path)


def test_change(reader: Reader, test_id: str, language: str, rule: TestRule) -> TestChange:
    """What the change did to the base test ``test_id`` (a runner's id)."""
    python = language == "python" or test_id.split("::", 1)[0].endswith(".py")
    try:
        path, name = locate(reader.tree, test_id, python, rev=reader.base)
    except NoTest as why:
        return TestChange(test_id, UNTOUCHED, how=f"not found in the base's files: {why}")
    old = reader.at(reader.base, path)
    if old is None:
        return TestChange(test_id, UNTOUCHED)
    new = reader.at(reader.commit, path) if path in reader.changed else old
    if new is None:
        return TestChange(test_id, DELETED, how=f"{path} removed")
    found = _python(test_id, name, old, new) if python else _block(test_id, name, path, old, new)
    if found.action == UNTOUCHED:
        own = test_id + "\n" + _own_source(name, path, old, python)
        return _data(reader, test_id, path, own, rule) or _listed(reader, test_id, rule) or found
    return found


def _own_source(name: str, path: str, text: str, python: bool) -> str:
    """The test's own text (a Python function with its decorators, a block), what tells
    which data it reads."""
    if python:
        try:
            func = find_function(_parse(text).body, name.split("::"))
        except SyntaxError:
            return ""
        if func is None:
            return ""
        return "\n".join([*(ast.unparse(d) for d in func.decorator_list), ast.unparse(func)])
    lines = text.splitlines(True)
    try:
        start, _head, end = block(lines, name, path)
    except NoTest:
        return ""
    return "".join(lines[start : end + 1])


# --- Python -------------------------------------------------------------------------------

_SKIP_MARKS = re.compile(r"\b(?:pytest\.mark\.skip(?:if)?|unittest\.skip\w*|skip(?:If|Unless)?)\b")
_XFAIL_MARKS = re.compile(r"\b(?:pytest\.mark\.xfail|unittest\.expectedFailure|expectedFailure)\b")
_SKIP_CALLS = re.compile(r"\b(?:pytest\.skip|pytest\.importorskip|self\.skipTest)\(")
_XFAIL_CALLS = re.compile(r"\bpytest\.xfail\(")
_EXACT_OPS = (ast.Eq, ast.Is, ast.IsNot, ast.NotEq)
_BROAD = {"Exception", "BaseException"}


def _python(test_id: str, name: str, old_text: str, new_text: str) -> TestChange:
    try:
        old_mod, new_mod = _parse(old_text), _parse(new_text)
    except SyntaxError:
        return TestChange(test_id, UNTOUCHED)
    old = find_function(old_mod.body, name.split("::"))
    new = find_function(new_mod.body, name.split("::"))
    if old is None:
        return TestChange(test_id, UNTOUCHED)
    if new is None:
        return TestChange(test_id, DELETED, how="its function is gone")
    old_decos = [ast.unparse(d) for d in old.decorator_list]
    new_decos = [ast.unparse(d) for d in new.decorator_list]
    added = [d for d in new_decos if d not in old_decos]
    added += _class_marks(new_mod, old_mod, name)
    if any(_XFAIL_MARKS.search(d) for d in added):
        return TestChange(test_id, XFAILED, how="an xfail mark added")
    if any(_SKIP_MARKS.search(d) for d in added):
        return TestChange(test_id, SKIPPED, how="a skip mark added")
    old_body, new_body = _body_source(old), _body_source(new)
    calls_added = [ln for ln in new_body if ln not in old_body]
    if any(_XFAIL_CALLS.search(ln) for ln in calls_added):
        return TestChange(test_id, XFAILED, how="pytest.xfail() added")
    if any(_SKIP_CALLS.search(ln) for ln in calls_added):
        return TestChange(test_id, SKIPPED, how="a skip call added")
    marks = _module_marks(new_mod, old_mod)
    if marks:
        kind = XFAILED if _XFAIL_MARKS.search(marks) else SKIPPED
        return TestChange(test_id, kind, how=f"`{marks}` added")
    if ast.dump(old) == ast.dump(new):
        return _python_helpers(test_id, old, old_mod, new_mod)
    weak = _python_weakened(old, new)
    if weak:
        return TestChange(test_id, WEAKENED, how=weak)
    before, after = _checks(old), _checks(new)
    old_lines, new_lines = _differing(before, after)
    how = ""
    if not old_lines and not new_lines:  # the checks are the same: the data they check
        params_old = [d for d in old_decos if "parametrize" in d]
        params_new = [d for d in new_decos if "parametrize" in d]
        if params_old != params_new:
            old_lines, new_lines = _differing(_entries(params_old), _entries(params_new))
            how = "its parameters"
        else:
            old_lines, new_lines = _differing(old_body, new_body)
    return TestChange(test_id, REWRITTEN, tuple(old_lines), tuple(new_lines), how, bool(how))


@functools.lru_cache(maxsize=16)
def _parse(text: str) -> ast.Module:
    """A test file's tree, parsed once for all of its tests (never changed by a reader)."""
    return ast.parse(text)


def find_function(body: list[ast.stmt], names: list[str]) -> ast.FunctionDef | None:
    """The test function ``Class::test`` (or ``test``) in a module's body."""
    for node in body:
        if getattr(node, "name", None) != names[0]:
            continue
        if len(names) == 1 and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node  # type: ignore[return-value]
        if len(names) > 1 and isinstance(node, ast.ClassDef):
            return find_function(node.body, names[1:])
    return None


def _module_marks(new_mod: ast.Module, old_mod: ast.Module) -> str:
    """A ``pytestmark`` the module gained that skips or xfails its tests."""

    def marks(mod: ast.Module) -> set[str]:
        found = set()
        for node in mod.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
            ):
                found.add(ast.unparse(node))
        return found

    gained = sorted(marks(new_mod) - marks(old_mod))
    hit = [m for m in gained if _SKIP_MARKS.search(m) or _XFAIL_MARKS.search(m)]
    return hit[0] if hit else ""


def _python_helpers(
    test_id: str, func: ast.FunctionDef, old_mod: ast.Module, new_mod: ast.Module
) -> TestChange:
    """The test's function is untouched: what it uses from its module (an expected
    table, a helper that asserts, a fixture) may have changed."""
    used = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    used |= {a.arg for a in func.args.args}
    before, after = _top_level(old_mod), _top_level(new_mod)
    for name in sorted(used & set(before)):
        was, now = before[name], after.get(name)
        if now is None or ast.dump(was) == ast.dump(now):
            continue
        if isinstance(was, ast.FunctionDef | ast.AsyncFunctionDef) and isinstance(
            now, ast.FunctionDef | ast.AsyncFunctionDef
        ):
            weak = _python_weakened(was, now)  # type: ignore[arg-type]
            if weak:
                return TestChange(test_id, WEAKENED, how=f"its helper {name}: {weak}")
            old_lines, new_lines = _differing(_body_source(was), _body_source(now))  # type: ignore[arg-type]
        else:
            old_lines, new_lines = _differing(_elements(was), _elements(now))
        return TestChange(test_id, REWRITTEN, tuple(old_lines), tuple(new_lines), f"its {name}")
    return TestChange(test_id, UNTOUCHED)


def _top_level(mod: ast.Module) -> dict[str, ast.stmt]:
    found: dict[str, ast.stmt] = {}
    for node in mod.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


def _elements(node: ast.stmt) -> list[str]:
    """An assignment's value entry by entry (a dict's items, a list's elements)."""
    value = getattr(node, "value", None)
    if isinstance(value, ast.Dict):
        return [
            f"{ast.unparse(k) if k is not None else '**'}: {ast.unparse(v)}"
            for k, v in zip(value.keys, value.values, strict=False)
        ]
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return [ast.unparse(e) for e in value.elts]
    return [ast.unparse(node)]


def _class_marks(new_mod: ast.Module, old_mod: ast.Module, name: str) -> list[str]:
    """Decorators a test's class gained (a skip on the whole class)."""
    if "::" not in name:
        return []
    cls = name.split("::")[0]

    def decos(mod: ast.Module) -> list[str]:
        for node in mod.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                return [ast.unparse(d) for d in node.decorator_list]
        return []

    before = decos(old_mod)
    return [d for d in decos(new_mod) if d not in before]


def _body_source(func: ast.FunctionDef) -> list[str]:
    return [ast.unparse(s) for s in func.body]


def _checks(func: ast.FunctionDef) -> list[ast.AST]:
    """The assertions of a test, in order: ``assert``, ``self.assert*``/``fail*`` calls,
    ``pytest.raises``/``warns``/``fail`` calls (a ``with`` item's too)."""
    found: list[ast.AST] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assert) or (isinstance(node, ast.Call) and _check_name(node)):
            found.append(node)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _check_name(call: ast.Call) -> str:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name.startswith(("assert", "fail")) or name in ("raises", "warns", "approx"):
        return name
    return ""


def _python_weakened(old: ast.FunctionDef, new: ast.FunctionDef) -> str:
    before, after = _checks(old), _checks(new)
    if len(after) < len(before):
        return f"{len(before) - len(after)} assertion(s) removed"
    for node in after:
        if _trivial(node):
            return f"`{ast.unparse(node)}` is always true"
    if _swallows(new) and not _swallows(old):
        return "a try/except now swallows the assertion's failure"
    matcher = difflib.SequenceMatcher(a=[_shape(n) for n in before], b=[_shape(n) for n in after])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag not in ("replace", "equal"):  # equal: the same kind of check, maybe changed
            continue
        for o, n in zip(before[i1:i2], after[j1:j2], strict=False):
            why = _loosened(o, n)
            if why:
                return f"`{ast.unparse(o)}` loosened to `{ast.unparse(n)}` ({why})"
    return ""


def _shape(node: ast.AST) -> str:
    if isinstance(node, ast.Assert):
        return "assert"
    return _check_name(node)  # type: ignore[arg-type]


def _trivial(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        test = node.test
    elif isinstance(node, ast.Call) and _check_name(node) in ("assertTrue", "assert_"):
        test = node.args[0] if node.args else ast.Constant(True)
    elif isinstance(node, ast.Call) and _check_name(node) in ("assertEqual", "assertEqualS"):
        return len(node.args) >= 2 and ast.dump(node.args[0]) == ast.dump(node.args[1])
    else:
        return False
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return any(isinstance(v, ast.Constant) and bool(v.value) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        same = ast.dump(test.left) == ast.dump(test.comparators[0])
        return same and isinstance(test.ops[0], ast.Eq | ast.Is | ast.LtE | ast.GtE)
    return False


def _swallows(func: ast.FunctionDef) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                caught = ast.unparse(handler.type) if handler.type is not None else ""
                if not caught or any(
                    w in caught for w in ("AssertionError", "Exception", "BaseException")
                ):
                    return True
    return False


def _loosened(old: ast.AST, new: ast.AST) -> str:
    """Why ``new`` checks less than ``old`` (same kind of check, changed), or ""."""
    if isinstance(old, ast.Assert) and isinstance(new, ast.Assert):
        o, n = old.test, new.test
        if isinstance(o, ast.Compare) and not isinstance(n, ast.Compare):
            return "the comparison is gone"
        if isinstance(o, ast.Compare) and isinstance(n, ast.Compare):
            kept = [type(x) for x in o.ops] == [type(x) for x in n.ops]
            if not kept and any(isinstance(x, _EXACT_OPS) for x in o.ops):
                return "an exact comparison became a looser one"
        return ""
    if not isinstance(old, ast.Call) or not isinstance(new, ast.Call):
        return ""
    if _check_name(old) != _check_name(new):
        return f"{_check_name(old)} became {_check_name(new)}"
    kept = {k.arg for k in new.keywords}
    lost = [k.arg for k in old.keywords if k.arg and k.arg not in kept]
    if lost:
        return f"{', '.join(lost)} dropped"
    if _check_name(old) in ("raises", "warns", "assertRaises", "assertRaisesRegex"):
        widened = {ast.unparse(a) for a in new.args[:1]} & _BROAD
        if widened and not {ast.unparse(a) for a in old.args[:1]} & _BROAD:
            return "the exception caught is any exception now"
        if len(new.args) < len(old.args):
            return "an argument dropped"
    return ""


def _differing(before: list, after: list) -> tuple[list[str], list[str]]:
    """The lines (or nodes' sources) that differ between ``before`` and ``after``."""
    a = [x if isinstance(x, str) else ast.unparse(x) for x in before]
    b = [x if isinstance(x, str) else ast.unparse(x) for x in after]
    old, new = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
        if tag != "equal":
            old += a[i1:i2]
            new += b[j1:j2]
    return old, new


def _entries(decorators: list[str]) -> list[str]:
    """A ``parametrize`` decorator's entries, one each."""
    out: list[str] = []
    for text in decorators:
        try:
            call = ast.parse(text, mode="eval").body
        except SyntaxError:
            out.append(text)
            continue
        values = call.args[1] if isinstance(call, ast.Call) and len(call.args) > 1 else None
        if isinstance(values, ast.List | ast.Tuple):
            out += [ast.unparse(v) for v in values.elts]
        else:
            out.append(text)
    return out


# --- Go, Rust, JavaScript: blocks ---------------------------------------------------------

_FAILS = {
    ".go": re.compile(
        r"\bt\.(?:Fatal|Fatalf|Error|Errorf|Fail|FailNow)\(|\b(?:assert|require)\.\w+\("
    ),
    ".rs": re.compile(r"\b(?:assert|assert_eq|assert_ne|debug_assert\w*|panic)!\(|\.unwrap\(\)"),
    "js": re.compile(r"\b(?:assert(?:\.\w+)?|expect)\("),
}
_EQUALITY = re.compile(r"===|!==|==|!=")


def _flipped(old: list[str], new: list[str]) -> str:
    """A changed line whose equality tests changed (``if got != want`` → ``if got ==
    99``): what guards a failure call no longer checks the same thing."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        if tag != "replace":
            continue
        for was, now in zip(old[i1:i2], new[j1:j2], strict=False):
            if _EQUALITY.findall(was) != _EQUALITY.findall(now):
                return f"`{was}` became `{now}`: its comparison changed"
    return ""


_GO_FAIL = re.compile(r"^t\.(?:Fatal|Fatalf|Error|Errorf|Fail|FailNow)\($")


def _calls(kind: str, lines: list[str]) -> list[str]:
    """The block's failure calls and assertions, in order (Go's ``t.Fatal*``/``t.Error*``
    as one: each fails the test)."""
    found = [m.group(0) for ln in lines for m in _FAILS[kind].finditer(ln)]
    return ["t.Fatal(" if _GO_FAIL.match(c) else c for c in found]


_TRIVIAL = {
    ".go": re.compile(r"\bif\s+false\s*\{"),
    ".rs": re.compile(r"\bassert!\(\s*true\s*\)"),
    "js": re.compile(r"\b(?:assert(?:\.ok)?|expect)\(\s*(?:true|1)\s*\)(?!\.\w+\((?!true))"),
}
_FOCUS = re.compile(r"\b(?:it|test|describe|context|suite)\.only\b|\b(?:fit|fdescribe|ftest)\s*\(")
_RUST_IGNORE = re.compile(r"#\[ignore\b")


def _kind(path: str) -> str:
    suffix = PurePosixPath(path).suffix
    return suffix if suffix in (".go", ".rs") else "js"


def _block(test_id: str, name: str, path: str, old_text: str, new_text: str) -> TestChange:
    old_lines, new_lines = old_text.splitlines(True), new_text.splitlines(True)
    try:
        start, _head, end = block(old_lines, name, path)
    except NoTest:
        return TestChange(test_id, UNTOUCHED)
    old = [ln.strip() for ln in old_lines[start : end + 1]]
    kind = _kind(path)
    if kind == "js":
        added_focus = [ln for ln in new_lines if _FOCUS.search(ln) and ln not in old_lines]
        try:
            start, head, end = block(new_lines, name, path)
        except NoTest:
            start = -1
        if added_focus and (start < 0 or not _FOCUS.search(new_lines[head])):
            return TestChange(test_id, FOCUSED_AWAY, how=f"`{added_focus[0].strip()}` added")
    else:
        try:
            start, _head, end = block(new_lines, name, path)
        except NoTest:
            start = -1
    if start < 0:
        return TestChange(test_id, DELETED, how="its function is gone")
    new = [ln.strip() for ln in new_lines[start : end + 1]]
    if old == new:
        return _block_helpers(test_id, name, kind, old, old_lines, new_lines)
    marks = registry.weakening()
    gained = [ln for ln in new if ln not in old]
    if kind == ".rs" and any(_RUST_IGNORE.search(ln) for ln in gained):
        return TestChange(test_id, SKIPPED, how="#[ignore] added")
    if any(marks.search("+" + ln) for ln in gained):
        line = next(ln for ln in gained if marks.search("+" + ln))
        return TestChange(test_id, SKIPPED, how=f"`{line}` added")
    before_calls, after_calls = _calls(kind, old), _calls(kind, new)
    count = len(before_calls) - len(after_calls)
    if count > 0:
        return TestChange(test_id, WEAKENED, how=f"{count} failure call(s) or assertion(s) removed")
    for was, now in zip(before_calls, after_calls, strict=False):
        if was != now:  # assert_eq! → assert!, strictEqual → ok, Fatalf → Logf
            return TestChange(test_id, WEAKENED, how=f"`{was}` became `{now}`")
    trivial = [ln for ln in gained if _TRIVIAL[kind].search(ln)]
    if trivial:
        return TestChange(test_id, WEAKENED, how=f"`{trivial[0]}` is always true")
    flipped = _flipped(old, new)
    if flipped:
        return TestChange(test_id, WEAKENED, how=flipped)
    before, after = _differing(old, new)
    return TestChange(test_id, REWRITTEN, tuple(before), tuple(after))


_TOP = {
    ".go": re.compile(r"^(?:func(?: \([^)]*\))?|var|const|type)\s+(\w+)"),
    "js": re.compile(r"^(?:export\s+)?(?:const|let|var|function|class|async function)\s+(\w+)"),
}


def _declarations(lines: list[str], kind: str) -> dict[str, list[str]]:
    """A file's top-level declarations by name, each its lines (gofmt's and the usual JS
    layout: a declaration starts at column 0)."""
    top = _TOP.get(kind)
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line[:1].strip():
            m = top.match(line) if top is not None else None
            current = found.setdefault(m.group(1), []) if m else None
        if current is not None:
            current.append(line.strip())
    return found


def _block_helpers(
    test_id: str, name: str, kind: str, test: list[str], old_lines: list[str], new_lines: list[str]
) -> TestChange:
    """The test's block is untouched: a table or helper of its file that it names may
    have changed (a Go table test's cases, its checker)."""
    if old_lines == new_lines:
        return TestChange(test_id, UNTOUCHED)
    before, after = _declarations(old_lines, kind), _declarations(new_lines, kind)
    text = "\n".join(test)
    for helper in sorted(before):
        was, now = before[helper], after.get(helper)
        if helper == name or now is None or was == now:
            continue
        if not re.search(rf"\b{re.escape(helper)}\b", text):
            continue
        was_calls, now_calls = _calls(kind, was), _calls(kind, now)
        if len(now_calls) < len(was_calls) or any(
            a != b for a, b in zip(was_calls, now_calls, strict=False)
        ):
            return TestChange(test_id, WEAKENED, how=f"its helper {helper} checks less")
        old, new = _differing(was, now)
        return TestChange(test_id, REWRITTEN, tuple(old), tuple(new), f"its {helper}")
    return TestChange(test_id, UNTOUCHED)


# --- data files ---------------------------------------------------------------------------

_EXCUSE_LIST = re.compile(r"xfail|skip|known.?fail|expected.?fail|flaky|ignore|exclude|allow", re.I)
_CODE = (".py", ".go", ".rs", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")
_GENERIC = {"tests", "test", "testing", "__tests__", "data", "src", "fixtures", "."}


def _data(
    reader: Reader, test_id: str, path: str, test_text: str, rule: TestRule
) -> TestChange | None:
    """The test's code is untouched: a data file it reads (its id, its function or block
    names the file, its stem or its folder) that the change edited."""
    folder = PurePosixPath(path).parent
    for data, status in sorted(reader.changed.items()):
        pure = PurePosixPath(data)
        if data == path or pure.suffix in _CODE:
            continue
        testdata = pure.is_relative_to(folder / "testdata")
        if not (testdata or rule.is_test_path(data)) or not _reads(test_text, pure):
            continue
        old = reader.at(reader.base, data) if status[:1] != "A" else None
        new = reader.at(reader.commit, data) if status[:1] != "D" else None
        removed, added = _lines_changed(old, new)
        if _EXCUSE_LIST.search(pure.name) and added:
            return TestChange(test_id, XFAILED, (), tuple(added), how=f"listed in {data}")
        if old is None:
            removed, added = [], [f"added {data}", *added[:2]]
        elif new is None:
            removed, added = [f"{data}: {ln}" for ln in removed[:2]] or [data], ["removed"]
        return TestChange(test_id, REWRITTEN, tuple(removed), tuple(added), data, True)
    return None


_XFAIL_WORDS = re.compile(r"xfail|known.?fail|expected.?fail|expectedFailure", re.I)


def _listed(reader: Reader, test_id: str, rule: TestRule) -> TestChange | None:
    """The test's code is untouched: a list of tests allowed to fail or be skipped that
    the change edited names it in a line it adds — a ``conftest.py`` that xfails or skips
    the tests it lists, or a test data file named for such a list (``xfail.txt``,
    ``known_failures.json``) read by the suite's own code."""
    name = test_id.split("::")[-1]
    names = {test_id, name, name.split("[")[0]}
    pattern = re.compile("|".join(rf"(?<![\w.]){re.escape(n)}(?![\w])" for n in names))
    for data, status in sorted(reader.changed.items()):
        pure = PurePosixPath(data)
        conftest = pure.name == "conftest.py"
        if status[:1] == "D" or not rule.is_test_path(data):
            continue
        if not conftest and not (_EXCUSE_LIST.search(pure.name) and pure.suffix not in _CODE):
            continue
        old = reader.at(reader.base, data) if status[:1] != "A" else None
        new = reader.at(reader.commit, data) or ""
        added = [ln for ln in _lines_changed(old, new)[1] if pattern.search(ln)]
        if not added:
            continue
        said = new if conftest else pure.name + "\n" + new
        if _XFAIL_WORDS.search(said):
            return TestChange(test_id, XFAILED, (), tuple(added), how=f"listed in {data}")
        if conftest and not _SKIP_WORDS.search(new):
            continue  # a conftest naming the test for another reason
        return TestChange(test_id, SKIPPED, (), tuple(added), how=f"listed in {data}")
    return None


_SKIP_WORDS = re.compile(r"\bskip|deselect", re.I)


def _reads(test_text: str, data: PurePosixPath) -> bool:
    """Does the test file name this data file (its name, its stem or one of its folders
    below the test folders)?"""
    names = {data.name, data.stem, *(p for p in data.parts[:-1] if p not in _GENERIC)}
    return any(re.search(rf"\b{re.escape(n)}\b", test_text, re.I) for n in names if len(n) > 2)


def _lines_changed(old: str | None, new: str | None) -> tuple[list[str], list[str]]:
    a = [ln.strip() for ln in (old or "").splitlines() if ln.strip()]
    b = [ln.strip() for ln in (new or "").splitlines() if ln.strip()]
    return _differing(a, b)
