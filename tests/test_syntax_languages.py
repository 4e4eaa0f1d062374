"""The syntax stage reads every language the index parses: an edit that leaves a
JavaScript, TypeScript, Go or Rust file with a syntax error it did not have is refused
before any check runs; a file that was already broken is not blamed on the change."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CALC, TEST_CALC, cli, directives, log_json, make_repo

SOURCES = {
    "web/app.js": (
        "export function add(a, b) {\n  return a + b;\n}\n",
        "  return a + b;",
        "  return a + ;",
    ),
    "web/shape.ts": (
        "export const area = (r: number): number => r * r;\n",
        "export const area = (r: number): number => r * r;",
        "export const area = (r: number): number => r * (r;",
    ),
    "cart/cart.go": (
        "package cart\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
        "\treturn a + b",
        "\treturn a + {",
    ),
    "src/lib.rs": (
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        "    a + b",
        "    a + + }",
    ),
}
GRAMMARS = {
    ".js": "tree_sitter_javascript",
    ".ts": "tree_sitter_typescript",
    ".go": "tree_sitter_go",
    ".rs": "tree_sitter_rust",
}


def _edit(path: str, old: str, new: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


@pytest.mark.parametrize("path", sorted(SOURCES))
def test_an_edit_that_breaks_the_syntax_is_refused(
    path: str, tmp_path: Path, script: Callable[..., str]
) -> None:
    pytest.importorskip(GRAMMARS[Path(path).suffix])
    text, old, bad = SOURCES[path]
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, path: text}
    repo = make_repo(tmp_path / "r", files, directives(goals=("Tidy the code",)))
    good = _edit(path, old, old + "  ")  # trailing spaces: still parses
    spec = script(propose=[_edit(path, old, bad)])
    cli("run", "--repo", str(repo), "--model", spec, check=True)
    [attempt] = log_json(repo)
    assert attempt["outcome"] == "rejected"
    assert attempt["reason"].startswith(f"syntax error: {path}:"), attempt["reason"]
    assert "does not parse" in attempt["reason"]

    cli("run", "--repo", str(repo), "--model", script(propose=[good]), check=True)
    assert "syntax" not in str(log_json(repo)[-1]["reason"])


def test_a_file_already_broken_is_not_blamed_on_the_change(
    tmp_path: Path, script: Callable[..., str]
) -> None:
    pytest.importorskip("tree_sitter_javascript")
    broken = "export function f( {\n  return 1;\n}\n// tail\n"
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "web/old.js": broken}
    repo = make_repo(tmp_path / "r", files, directives(goals=("Tidy the code",)))
    spec = script(propose=[_edit("web/old.js", "// tail", "// tail, edited")])
    proc = cli("run", "--repo", str(repo), "--model", spec, "--json", check=True)
    steps = [json.loads(line) for line in proc.stdout.splitlines()]
    syntax = [s for s in steps if s.get("event") == "step" and s.get("name") == "syntax"]
    assert syntax and syntax[0]["ok"] is True
