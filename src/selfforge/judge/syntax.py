"""Static checks of a candidate that run no candidate code: syntax, and complexity facts
for the critic."""

from __future__ import annotations

import ast
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
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                score = 1 + sum(
                    isinstance(n, _BRANCHES) or (isinstance(n, ast.BoolOp) and len(n.values) - 1)
                    for n in ast.walk(node)
                )
                if score > limit:
                    found.append(
                        f"{rel}:{node.lineno}: {node.name}() has cyclomatic "
                        f"complexity {score} (over {limit})"
                    )
    return found
