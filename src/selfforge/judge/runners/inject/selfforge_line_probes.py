"""Which statements of a few Python files a test process runs, without a trace function.

selfforge's pytest plugin asks which lines of a change's files the tests execute (issue
41.3). coverage.py answers through a trace function, and on Python before 3.12 a trace
function slows every line of every file, not only the files asked about (h11's suite:
2.1 s plain, 3.3 s traced). Here the files asked about are compiled, when imported,
with a probe before each statement (``__selfforge_lines__.add(<line>)``: a set the
loader puts in the module's namespace); nothing else is touched, so the rest of the
suite runs at full speed. The same idea as pytest's assertion rewriting: an import hook
that compiles a rewritten tree of the file, its lines and source unchanged.

What counts as a statement follows coverage.py: the first line of each statement,
decorators' lines with their definition, an ``except``/``case`` line when its block is
entered; not docstrings, ``global``/``nonlocal``, nor a
line coverage.py excludes by default (``# pragma: no cover``, a stub's ``...``, ``if
TYPE_CHECKING:``), with the block it opens. A file imported before
the hook could be installed, or one whose functions numba compiles from their bytecode,
cannot be measured this way: ``install`` says so and the plugin measures with
coverage.py instead. Standard library only: it runs in the
project's Python, whatever is installed there.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import os
import re
import sys

NAME = "__selfforge_lines__"
# coverage.py's default exclusions: a line marked no cover, a stub's `...` (`def f(x)
# -> int: ...` too) and `if TYPE_CHECKING:`: the statement on such a line (any line of
# its head), with the block it opens
_EXCLUDED = re.compile(
    r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)"
    r"|^\s*(((async )?def .*?)?[\])]+(\s*->.*?)?:\s*)?\.\.\.\s*(#|$)"
    r"|^\s*if (typing\.)?TYPE_CHECKING:"
)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases", "decorator_list")


def _header_end(node: ast.AST) -> int:
    """The last line of a compound statement's header (its parts before the body)."""
    end = getattr(node, "lineno", 0)
    for name, value in ast.iter_fields(node):
        if name in _BODIES:
            continue
        for part in value if isinstance(value, list) else [value]:
            end = max(end, getattr(part, "end_lineno", 0) or 0)
    return end


class _Probes(ast.NodeTransformer):
    """A probe before every statement of every body; the statements' lines collected."""

    def __init__(self, source: str) -> None:
        self.lines: set[int] = set()
        self._source = source.splitlines()
        self._scopes: list[bool] = [False]  # per enclosing scope: a function's?

    def _line(self, line: int) -> str:
        return self._source[line - 1] if 0 < line <= len(self._source) else ""

    def _excluded(self, line: int) -> bool:
        return bool(_EXCLUDED.search(self._line(line)))

    def _left_out(self, node: ast.stmt, lines: list[int]) -> bool:
        """Whether coverage.py leaves ``node`` out: a line of its head excluded, or a
        function whose whole body is (a stub: ``def f(self) -> int:`` then ``...``)."""
        head = [*lines, *range(node.lineno + 1, _header_end(node) + 1)]
        if any(self._excluded(n) for n in head):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return all(self._left_out(b, [b.lineno]) for b in node.body)
        return False

    def _clause_excluded(self, first: ast.stmt) -> bool:
        """Whether the ``else:``/``finally:`` line above a clause's first statement is
        marked (an ``elif`` has no line of its own)."""
        if re.match(r"\s*(else|finally)\s*:", self._line(first.lineno)):
            return self._excluded(first.lineno)  # `else: x  # pragma: no cover`
        line = first.lineno - 1
        while 0 < line <= len(self._source):
            text = self._line(line).strip()
            if text and not text.startswith("#"):
                return bool(re.match(r"(else|finally)\s*:", text)) and self._excluded(line)
            line -= 1
        return False

    def _probe(self, line: int, where: ast.AST) -> ast.stmt:
        self.lines.add(line)
        call = ast.Expr(
            ast.Call(
                ast.Attribute(ast.Name(NAME, ast.Load()), "add", ast.Load()),
                [ast.Constant(line)],
                [],
            )
        )
        return ast.copy_location(call, where)

    def _body(  # type: ignore[no-untyped-def]
        self, body: list[ast.stmt], first=None, where=None, docstring=False, header=(0, 0)
    ) -> list:
        """``body`` with its probes. ``header``: the lines of the statement that owns it,
        to its colon; a statement on one of them counts as the owner's first line (as
        coverage.py counts ``def f(\n    x,\n) -> None: ...``)."""
        out: list[ast.stmt] = []
        future: list[ast.stmt] = []
        if first is not None:
            out.append(self._probe(first, where))  # an except/case line: its block entered
        for i, node in enumerate(body):
            if i == 0 and docstring and _is_docstring(node):
                out.append(node)
                continue
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                out.append(node)  # nothing may come before it: its probe comes after
                future.append(node)
                continue
            while future:
                out.append(self._probe(future[0].lineno, future.pop(0)))
            lines = [header[0] if header[0] < node.lineno <= header[1] else node.lineno]
            lines += [d.lineno for d in getattr(node, "decorator_list", ())]
            if self._left_out(node, lines):
                # the block it opens is left out, as coverage.py leaves it out; an
                # if's else is not that block
                if (
                    isinstance(node, ast.If)
                    and node.orelse
                    and not self._clause_excluded(node.orelse[0])
                ):
                    node.orelse = self._body(node.orelse)
                out.append(node)
                continue
            bare = (  # `x: int` in a function compiles to nothing (`self.x: int` does not)
                isinstance(node, ast.AnnAssign)
                and node.value is None
                and isinstance(node.target, ast.Name)
                and self._scopes[-1]
            )
            if not isinstance(node, (ast.Global, ast.Nonlocal)) and not bare:
                # a definition's line and its decorators' run together
                out.extend(self._probe(line, node) for line in sorted(set(lines)))
            out.append(self.visit(node))
        out.extend(self._probe(node.lineno, node) for node in future)  # nothing after them
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        test = getattr(node, "test", None)
        dead = isinstance(node, (ast.If, ast.While)) and isinstance(test, ast.Constant)
        definition = isinstance(node, _DEFINITIONS)
        if definition:
            self._scopes.append(not isinstance(node, ast.ClassDef))
        header = (getattr(node, "lineno", 0), _header_end(node))
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if dead and (field == "body") != bool(test.value):  # type: ignore[union-attr]
                continue  # the compiler leaves out `if 0:`/`while False:` blocks
            if field != "body" and value and self._clause_excluded(value[0]):
                continue  # `else: # pragma: no cover`
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                kept = header if field == "body" else (0, 0)
                setattr(node, field, self._body(value, docstring=definition, header=kept))
        for handler in getattr(node, "handlers", ()):  # try and try/except*
            if not self._excluded(handler.lineno):
                handler.body = self._body(handler.body, handler.lineno, handler)
        for case in getattr(node, "cases", ()):  # match (3.10+)
            line = case.pattern.lineno
            if not self._excluded(line):
                case.body = self._body(case.body, line, case.pattern)
        if definition:
            self._scopes.pop()
        return node

    def visit_Module(self, node: ast.Module) -> ast.Module:
        node.body = self._body(node.body, docstring=True)
        return node


def instrument(source: str | bytes, path: str) -> tuple[object, set[int]]:
    """``source`` compiled as ``path`` with a probe before each statement, and the lines
    the probes stand for (the file's statements)."""
    tree = ast.parse(source, path)
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    probes = _Probes(text)
    tree = probes.visit(tree)
    ast.fix_missing_locations(tree)
    return compile(tree, path, "exec", dont_inherit=True), probes.lines


class _Loader(importlib.machinery.SourceFileLoader):
    """A file of the change: always compiled from its source (never from or into
    ``__pycache__``: the probes must not reach a plain run's bytecode), with probes."""

    def __init__(self, fullname: str, path: str, record: _Record) -> None:
        super().__init__(fullname, path)
        self._record = record

    def get_code(self, fullname: str):  # type: ignore[no-untyped-def]
        path = self.get_filename(fullname)
        code, lines = instrument(self.get_data(path), path)
        self._record.statements[self._record.files[os.path.realpath(path)]] = lines
        return code

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        path = os.path.realpath(self.get_filename(module.__name__))
        setattr(module, NAME, self._record.hit[self._record.files[path]])
        super().exec_module(module)


class _Record:
    """What ran, per file asked about (by the name the judge gave it)."""

    def __init__(self, files: list[str]) -> None:
        self.files = {os.path.realpath(f): f for f in files}
        self.statements: dict[str, set[int]] = {}
        self.hit: dict[str, set[int]] = {f: set() for f in files}

    def summary(self) -> dict:
        """Per file: its statements and those run; a file never imported has all its
        statements unrun (read from its source now)."""
        out = {}
        for path, name in self.files.items():
            lines = self.statements.get(name)
            if lines is None:
                try:
                    with open(path, "rb") as source:
                        _, lines = instrument(source.read(), path)
                except (OSError, SyntaxError, ValueError, RecursionError):
                    continue  # not Python this can read: not measured
            out[name] = {"statements": sorted(lines), "executed": sorted(self.hit[name] & lines)}
        return out


class _Finder:
    """Ahead of every other finder: the module's spec as the others find it, its loader
    swapped for the probing one when its file is one of the change's."""

    def __init__(self, record: _Record) -> None:
        self._record = record
        # the last part of the module name each file can be imported as
        self._names = {
            os.path.basename(os.path.dirname(f))
            if os.path.basename(f) == "__init__.py"
            else os.path.basename(f)[:-3]
            for f in record.files
        }

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname.rpartition(".")[2] not in self._names:
            return None  # not one of the change's files: the other finders' at once
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                return None  # the other finders' error is theirs to raise
            if spec is None:
                continue
            origin = spec.origin
            if (
                origin
                and origin.endswith(".py")
                and isinstance(spec.loader, importlib.machinery.SourceFileLoader)
                and os.path.realpath(origin) in self._record.files
            ):
                spec.loader = _Loader(fullname, origin, self._record)
                spec.cached = None
                return spec
            return None  # found elsewhere: that finder imports it, as it would have
        return None

    def invalidate_caches(self) -> None:
        pass


def already_imported(files: list[str]) -> list[str]:
    """The files asked about that this process imported already (before the hook)."""
    wanted = {os.path.realpath(f) for f in files}
    found = []
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            with contextlib.suppress(OSError, ValueError):
                if os.path.realpath(name) in wanted:
                    found.append(name)
    return found


# Libraries that compile a function's bytecode (a probe's call is a name numba's
# nopython mode cannot type): a file that uses one is measured by a tracer instead.
_READS_BYTECODE = re.compile(rb"^\s*(import|from)\s+(numba)\b", re.M)


def _reads_bytecode(path: str) -> bool:
    try:
        with open(path, "rb") as source:
            return bool(_READS_BYTECODE.search(source.read()))
    except OSError:
        return False


def install(files: list[str]) -> _Record | None:
    """Probe ``files`` (absolute paths) from their first import on; None when one of
    them is imported already, or compiled from its bytecode by a library (numba): the
    caller measures another way."""
    if already_imported(files) or any(_reads_bytecode(f) for f in files):
        return None
    record = _Record(files)
    sys.meta_path.insert(0, _Finder(record))
    return record
