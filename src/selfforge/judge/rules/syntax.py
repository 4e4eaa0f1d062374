"""Static checks of a candidate that run no candidate code: syntax, and complexity facts
for the critic."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from selfforge.repo.treefiles import NotReadable, read_bytes


@dataclass
class SyntaxProblem:
    path: str
    line: int
    message: str
    text: str

    def __str__(self) -> str:
        shown = f"\n    {self.text.strip()}" if self.text.strip() else ""
        return f"{self.path}:{self.line}: SyntaxError: {self.message}{shown}"


def check_syntax(
    root: Path, paths: Iterable[str], before: Callable[[str], bytes | None] | None = None
) -> list[SyntaxProblem]:
    """Compile every changed Python file that still exists; for the other languages the
    index parses (JavaScript, TypeScript, Go, Rust), no syntax error that the file did not
    already have (``before`` gives its text at the base, None for a new file)."""
    problems = []
    for rel in paths:
        source = _source(root, rel)
        if source is None:
            continue
        if not rel.endswith(".py"):
            problems += _tree_sitter_problems(root, rel, source, before)
            continue
        try:
            compile(source, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            line = exc.lineno or 0
            lines = source.decode("utf-8", errors="replace").splitlines()
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            problems.append(SyntaxProblem(rel, line, exc.msg, text))
        except ValueError as exc:  # e.g. null bytes
            problems.append(SyntaxProblem(rel, 0, str(exc), ""))
    return problems


def at_commit(tree: Path, commit: str) -> Callable[[str], bytes | None]:
    """A reader of files as ``commit`` holds them (None where one did not exist)."""
    from selfforge.repo import git

    def read(path: str) -> bytes | None:
        shown = git.call("show", f"{commit}:{path}", cwd=tree)
        return shown.stdout.encode() if shown.returncode == 0 else None

    return read


def _source(root: Path, rel: str) -> bytes | None:
    """The changed file's bytes; None for a symlink or anything not a regular file (a
    symlink's target is checked under its own name; never read out of the tree)."""
    if (root / rel).is_symlink():
        return None
    try:
        return read_bytes(root, rel)
    except NotReadable:
        return None


def _tree_sitter_problems(
    root: Path, rel: str, source: bytes, before: Callable[[str], bytes | None] | None
) -> list[SyntaxProblem]:
    from selfforge.context.parsing import spec_for

    spec = spec_for(rel)
    if spec is None:
        return []
    errors = _error_lines(spec.name, source)
    if not errors:
        return []
    old = before(rel) if before is not None else None
    if old is not None and len(_error_lines(spec.name, old)) >= len(errors):
        return []  # the file was as broken before the change (or the grammar cannot read it)
    lines = source.decode("utf-8", errors="replace").splitlines()
    line = errors[0]
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    message = f"{spec.name} does not parse here ({len(errors)} syntax error(s))"
    return [SyntaxProblem(rel, line, message, text)]


def _error_lines(language: str, source: bytes) -> list[int]:
    """Lines of the ERROR and MISSING nodes of tree-sitter's parse."""
    from selfforge.context.parsing import _parser

    root = _parser(language).parse(source).root_node
    if not root.has_error:
        return []
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            found.append(node.start_point[0] + 1)
            continue
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return sorted(found)


# --- complexity (facts for the critic) ---------------------------------------------------

_BRANCHES = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ExceptHandler,
    ast.With,
    ast.AsyncWith,
    ast.IfExp,
    ast.comprehension,
    ast.Assert,
    ast.match_case,
)


def complexity_findings(root: Path, paths: Iterable[str], limit: int = 10) -> list[str]:
    """Functions in the changed Python files whose cyclomatic complexity exceeds ``limit``."""
    found = []
    for rel in paths:
        source = _source(root, rel) if rel.endswith(".py") else None
        if source is None:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node, score in _complexities(tree):
            if score > limit:
                found.append(
                    f"{rel}:{node.lineno}: {node.name}() has cyclomatic "
                    f"complexity {score} (over {limit})"
                )
    return found


def _complexities(
    tree: ast.AST,
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int]]:
    """Each function's complexity (1 + its branches, nested functions' included), in one
    breadth-first pass over the tree rather than one more walk per function."""
    scores: list[list] = []  # [function, score], in ast.walk's order
    queue: deque[tuple[ast.AST, tuple[list, ...]]] = deque([(tree, ())])
    while queue:
        node, enclosing = queue.popleft()
        for child in ast.iter_child_nodes(node):
            branches = isinstance(child, _BRANCHES) or (
                isinstance(child, ast.BoolOp) and len(child.values) - 1
            )
            for record in enclosing:
                record[1] += branches
            inner = enclosing
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                record = [child, 1]
                scores.append(record)
                inner = (*enclosing, record)
            queue.append((child, inner))
    return [(node, score) for node, score in scores]
