"""Languages beyond Python, each through its grammar package when it is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.context.graph import load_graph
from selfforge.context.index import open_index
from selfforge.context.parsing import spec_for

from conftest import make_repo

APP_JS = """import { add } from "./lib/math.js";
import React from "react";

/** Totals a cart.
 * More detail.
 */
export function total(items, tax = 0) {
  return items.reduce(add, 0) * (1 + tax);
}

export const double = (x) => x * 2;

class Cart extends Base {
  /** Number of items. */
  size() { return this.items.length; }
}
"""
MATH_JS = "export function add(a, b) {\n  return a + b;\n}\n"
SHAPES_TS = """import { total } from "../app";

/** A shape with an area. */
export interface Shape {
  area(scale: number): number;
}

export type Point = { x: number; y: number };

export class Circle implements Shape {
  area(scale: number): number { return total([scale]); }
}
"""


def test_javascript_definitions_docs_and_imports(tmp_path: Path) -> None:
    pytest.importorskip("tree_sitter_javascript")
    repo = make_repo(tmp_path / "js", {"app.js": APP_JS, "lib/math.js": MATH_JS})
    index = open_index(repo / ".selfforge")
    index.update(repo)
    defs = {(d.parent, d.name): d for d in index.definitions("app.js")}
    assert defs[("", "total")].signature == "export function total(items, tax = 0)"
    assert defs[("", "total")].doc == "Totals a cart."
    assert defs[("", "double")].signature == "export const double = (x) =>"
    assert defs[("Cart", "size")].kind == "method"
    assert defs[("Cart", "size")].doc == "Number of items."
    graph = load_graph(index)
    assert graph.imports["app.js"] == {"lib/math.js"}


def test_typescript_interfaces_types_and_index_imports(tmp_path: Path) -> None:
    pytest.importorskip("tree_sitter_typescript")
    pytest.importorskip("tree_sitter_javascript")
    repo = make_repo(tmp_path / "ts", {"app.js": APP_JS, "src/shapes.ts": SHAPES_TS})
    index = open_index(repo / ".selfforge")
    index.update(repo)
    defs = {(d.parent, d.name): d for d in index.definitions("src/shapes.ts")}
    assert defs[("", "Shape")].doc == "A shape with an area."
    assert defs[("Shape", "area")].signature == "area(scale: number): number"
    assert defs[("", "Point")].kind == "type"
    assert defs[("Circle", "area")].kind == "method"
    assert load_graph(index).imports["src/shapes.ts"] == {"app.js"}


def test_a_file_without_an_installed_grammar_is_indexed_by_path_only(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"main.rs": "fn main() {}\n", "a.py": "def f():\n    pass\n"})
    index = open_index(repo / ".selfforge")
    index.update(repo)
    assert spec_for("main.rs") is None
    assert {f.path: f.lang for f in index.files()} == {"a.py": "python", "main.rs": "text"}
