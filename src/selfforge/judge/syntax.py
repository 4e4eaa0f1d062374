"""Static checks of a candidate that run no candidate code: syntax, and complexity facts
for the critic."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class SyntaxProblem:
    path: str
    line: int
    message: str
    text: str

    def __str__(self) -> str:
        shown = f"\n    {self.text.strip()}" if self.text.strip() else ""
        return f"{self.path}:{self.line}: SyntaxError: {self.message}{shown}"


def check_syntax(root: Path, paths: Iterable[str]) -> list[SyntaxProblem]:
    """Compile every changed Python file that still exists."""
    problems = []
    for rel in paths:
        if not rel.endswith(".py") or not (root / rel).is_file():
            continue
        source = (root / rel).read_bytes()
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
        if not rel.endswith(".py") or not (root / rel).is_file():
            continue
        try:
            tree = ast.parse((root / rel).read_bytes())
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
