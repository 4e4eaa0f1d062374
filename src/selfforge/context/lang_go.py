"""Go: functions, methods (under their receiver's type), types (structs, interfaces and
the rest), with the first line of the ``//`` comment above; imports.

A Go import names a package by its path ("example.com/proj/internal/mathx"), and a
package is a directory. The module's own prefix is not known while parsing one file, so
each import is stored as every trailing part of its path (``godir:internal/mathx``,
``godir:mathx``…); graph.py keys each directory of Go files the same way, and only the
directories that exist here match. One-word imports ("fmt") are the standard library.
"""

from __future__ import annotations

from tree_sitter import Node

from selfforge.context.syntax import Definition, LanguageSpec, node_text, squash


def _doc(node: Node, src: bytes) -> str:
    """First line of the ``//`` comments right above ``node``."""
    lines: list[str] = []
    before, row = node.prev_named_sibling, node.start_point[0]
    while before is not None and before.type == "comment" and before.end_point[0] == row - 1:
        lines.insert(0, node_text(before, src))
        before, row = before.prev_named_sibling, before.start_point[0]
    for line in lines:
        text = line.removeprefix("//").strip()
        if text:
            return text[:200]
    return ""


def _signature(node: Node, src: bytes) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    return squash(src[node.start_byte : end].decode("utf-8", "replace")).rstrip("{ ")


def _receiver_type(node: Node, src: bytes) -> str:
    receiver = node.child_by_field_name("receiver")
    text = node_text(receiver, src).strip("()")
    return text.split()[-1].lstrip("*").split("[")[0] if text.split() else ""


def go_definitions(root: Node, src: bytes) -> list[Definition]:
    out: list[Definition] = []
    for node in root.named_children:
        where = {"line": node.start_point[0] + 1, "end_line": node.end_point[0] + 1}
        if node.type == "function_declaration":
            name = node_text(node.child_by_field_name("name"), src)
            sig = _signature(node, src)
            out.append(Definition(name, "function", "", sig, _doc(node, src), **where))
        elif node.type == "method_declaration":
            name = node_text(node.child_by_field_name("name"), src)
            parent = _receiver_type(node, src)
            sig = _signature(node, src)
            out.append(Definition(name, "method", parent, sig, _doc(node, src), **where))
        elif node.type == "type_declaration":
            for spec in node.named_children:
                if spec.type not in ("type_spec", "type_alias"):
                    continue
                name = node_text(spec.child_by_field_name("name"), src)
                kind_node = spec.child_by_field_name("type")
                kind = (
                    "class"
                    if kind_node is not None and kind_node.type in ("struct_type", "interface_type")
                    else "type"
                )
                head = node_text(spec, src).split("{")[0]
                sig = squash(f"type {head}").rstrip("{ ")
                out.append(Definition(name, kind, "", sig, _doc(node, src), **where))
    return out


def go_imports(nodes: list[Node], src: bytes, path: str) -> list[str]:
    found: list[str] = []
    for node in sorted(nodes, key=lambda n: n.start_byte):
        target = node_text(node.child_by_field_name("path"), src).strip('"`')
        parts = [p for p in target.split("/") if p]
        if len(parts) < 2:  # "fmt", "strings": the standard library
            continue
        found += [f"godir:{'/'.join(parts[i:])}" for i in range(len(parts))]
    return list(dict.fromkeys(found))


GO = LanguageSpec(
    name="go",
    extensions=(".go",),
    grammar_module="tree_sitter_go",
    definitions=go_definitions,
    imports=go_imports,
    import_query="(import_spec) @import",
    prose_query="[(comment) (interpreted_string_literal) (raw_string_literal)] @prose",
)
