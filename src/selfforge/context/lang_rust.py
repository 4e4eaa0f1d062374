"""Rust: functions, structs, enums, traits, and the functions of ``impl`` blocks (under
their type), with the first ``///`` doc line; ``use`` and ``mod`` as module links.

A module path is the file's path below its crate's ``src/`` without ``.rs``
(``src/geometry/shapes.rs`` and ``src/geometry/shapes/mod.rs`` are ``geometry/shapes``;
``lib.rs`` and ``main.rs`` are the crate's root). ``use crate::geometry::shapes::Circle``
is stored as ``rsmod:geometry/shapes/Circle`` and each shorter prefix (an item or a
module: the one that exists matches); ``super::`` and ``self::`` are resolved against the
file's own module; ``mod helpers;`` links to the child module's file. Paths into other
crates (``std::``, dependencies) never match a file here.
"""

from __future__ import annotations

import posixpath

from tree_sitter import Node

from selfforge.context.syntax import Definition, LanguageSpec, node_text, squash

_ITEMS = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "class",
    "enum_item": "class",
    "trait_item": "class",
    "union_item": "class",
    "type_item": "type",
}


def _doc(node: Node, src: bytes) -> str:
    lines: list[str] = []
    before, row = node.prev_named_sibling, node.start_point[0]
    while before is not None and before.type in ("line_comment", "attribute_item"):
        if before.end_point[0] < row - 1:
            break
        if before.type == "line_comment":
            lines.insert(0, node_text(before, src))
        before, row = before.prev_named_sibling, before.start_point[0]
    for line in lines:
        if line.startswith("///"):
            text = line.removeprefix("///").strip()
            if text:
                return text[:200]
    return ""


def _item(node: Node, parent: str, src: bytes) -> Definition:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    kind = "method" if parent and node.type.startswith("function") else _ITEMS[node.type]
    return Definition(
        name=node_text(node.child_by_field_name("name"), src),
        kind=kind,
        parent=parent,
        signature=squash(src[node.start_byte : end].decode("utf-8", "replace")).rstrip("{; "),
        doc=_doc(node, src),
        line=node.start_point[0] + 1,
        end_line=node.end_point[0] + 1,
    )


def rust_definitions(root: Node, src: bytes) -> list[Definition]:
    out: list[Definition] = []
    for node in root.named_children:
        if node.type in _ITEMS:
            out.append(_item(node, "", src))
            if node.type == "trait_item":
                out += _members(node, node_text(node.child_by_field_name("name"), src), src)
        elif node.type == "impl_item":
            owner = node_text(node.child_by_field_name("type"), src).split("<")[0]
            out += _members(node, owner, src)
    return out


def _members(node: Node, owner: str, src: bytes) -> list[Definition]:
    body = node.child_by_field_name("body")
    return [
        _item(member, owner, src)
        for member in (body.named_children if body is not None else ())
        if member.type in ("function_item", "function_signature_item")
    ]


def module_of(path: str) -> str | None:
    """``crate/src/a/b.rs`` -> ``a/b``; ``src/lib.rs`` -> ""; None outside a ``src/``."""
    parts = path.split("/")
    if "src" not in parts:
        return None
    below = parts[len(parts) - 1 - parts[::-1].index("src") + 1 :]
    module = "/".join(below).removesuffix(".rs")
    if module in ("lib", "main"):
        return ""
    return module.removesuffix("/mod")


def rust_imports(nodes: list[Node], src: bytes, path: str) -> list[str]:
    here = module_of(path)
    if here is None:
        return []
    found: list[str] = []
    for node in sorted(nodes, key=lambda n: n.start_byte):
        if node.type == "mod_item":
            if node.child_by_field_name("body") is None:
                name = node_text(node.child_by_field_name("name"), src)
                # `mod x;` in a.rs, a/mod.rs (module "a") or lib.rs (""): a/x, or x
                found.append(f"rsmod:{posixpath.join(here, name) if here else name}")
            continue
        found += _use_targets(node_text(node.child_by_field_name("argument"), src), here)
    return list(dict.fromkeys(found))


def _use_targets(text: str, here: str) -> list[str]:
    words = [w for w in text.replace("{", "::").replace("}", "").split("::") if w.strip()]
    words = [w.strip().split(" as ")[0].split(",")[0].strip() for w in words]
    if not words:
        return []
    head, rest = words[0], words[1:]
    if head == "crate":
        module: list[str] = []
    elif head in ("self", "super"):
        module = here.split("/") if here else []
        while rest and head == "super":
            module = module[:-1]
            head = rest.pop(0) if rest and rest[0] == "super" else ""
    else:
        return []  # another crate: std, a dependency
    parts = [*module, *rest]
    return [f"rsmod:{'/'.join(parts[:n])}" for n in range(len(parts), 0, -1)]


RUST = LanguageSpec(
    name="rust",
    extensions=(".rs",),
    grammar_module="tree_sitter_rust",
    definitions=rust_definitions,
    imports=rust_imports,
    import_query="[(use_declaration) (mod_item)] @import",
    prose_query="[(line_comment) (block_comment) (string_literal) (raw_string_literal)] @prose",
)
