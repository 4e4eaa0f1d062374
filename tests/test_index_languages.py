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
    repo = make_repo(
        tmp_path / "r", {"main.zig": "pub fn main() void {}\n", "a.py": "def f():\n    pass\n"}
    )
    index = open_index(repo / ".selfforge")
    index.update(repo)
    assert spec_for("main.zig") is None
    assert {f.path: f.lang for f in index.files()} == {"a.py": "python", "main.zig": "text"}


GO_MOD = "module example.com/shop\n\ngo 1.21\n"
GO_CART = """package cart

import (
\t"fmt"
\tm "example.com/shop/internal/money"
)

// Cart holds items.
type Cart struct {
\tItems []int
}

// Total sums the cart.
// It never fails.
func (c *Cart) Total() m.Cents {
\treturn m.Sum(c.Items)
}

func New() *Cart { fmt.Println("new"); return &Cart{} }
"""
GO_MONEY = (
    "package money\n\ntype Cents int\n\n// Sum adds.\nfunc Sum(xs []int) Cents {\n\treturn 0\n}\n"
)


def test_go_types_methods_docs_and_package_imports(tmp_path: Path) -> None:
    pytest.importorskip("tree_sitter_go")
    files = {"go.mod": GO_MOD, "cart/cart.go": GO_CART, "internal/money/money.go": GO_MONEY}
    repo = make_repo(tmp_path / "go", files)
    index = open_index(repo / ".selfforge")
    index.update(repo)
    defs = {(d.parent, d.name): d for d in index.definitions("cart/cart.go")}
    assert defs[("", "Cart")].kind == "class" and defs[("", "Cart")].doc == "Cart holds items."
    total = defs[("Cart", "Total")]
    assert total.kind == "method" and total.doc == "Total sums the cart."
    assert total.signature == "func (c *Cart) Total() m.Cents"
    assert defs[("", "New")].kind == "function"
    money = {d.name: d for d in index.definitions("internal/money/money.go")}
    assert money["Cents"].kind == "type" and money["Sum"].doc == "Sum adds."
    # "fmt" is the standard library; the module's own package resolves to its directory.
    assert load_graph(index).imports["cart/cart.go"] == {"internal/money/money.go"}


RUST_LIB = """pub mod geometry;
mod util;

use crate::geometry::shapes::Circle;
use std::fmt;

/// Area of everything.
pub fn total(c: &Circle) -> f64 {
    c.area()
}
"""
RUST_GEOMETRY = "pub mod shapes;\n"
RUST_SHAPES = """use super::super::util::square;

/// A circle.
#[derive(Debug)]
pub struct Circle { pub r: f64 }

pub trait Area {
    fn area(&self) -> f64;
}

impl Area for Circle {
    /// Its area.
    fn area(&self) -> f64 { square(self.r) * 3.14 }
}
"""
RUST_UTIL = "pub fn square(x: f64) -> f64 { x * x }\n"


def test_rust_items_impls_docs_and_module_links(tmp_path: Path) -> None:
    pytest.importorskip("tree_sitter_rust")
    files = {
        "Cargo.toml": '[package]\nname = "shapes"\nversion = "0.1.0"\n',
        "src/lib.rs": RUST_LIB,
        "src/geometry/mod.rs": RUST_GEOMETRY,
        "src/geometry/shapes.rs": RUST_SHAPES,
        "src/util.rs": RUST_UTIL,
    }
    repo = make_repo(tmp_path / "rs", files)
    index = open_index(repo / ".selfforge")
    index.update(repo)
    shapes = {(d.parent, d.name): d for d in index.definitions("src/geometry/shapes.rs")}
    assert shapes[("", "Circle")].kind == "class" and shapes[("", "Circle")].doc == "A circle."
    assert shapes[("", "Area")].kind == "class"
    assert shapes[("Circle", "area")].kind == "method"
    assert shapes[("Circle", "area")].doc == "Its area."
    lib = {d.name: d for d in index.definitions("src/lib.rs")}
    assert lib["total"].signature == "pub fn total(c: &Circle) -> f64"
    graph = load_graph(index)
    assert graph.imports["src/lib.rs"] == {
        "src/geometry/mod.rs",  # `pub mod geometry;`
        "src/util.rs",  # `mod util;`
        "src/geometry/shapes.rs",  # `use crate::geometry::shapes::Circle`
    }
    assert graph.imports["src/geometry/mod.rs"] == {"src/geometry/shapes.rs"}
    assert graph.imports["src/geometry/shapes.rs"] == {"src/util.rs"}  # super::super::util
