"""JavaScript and TypeScript: functions, classes, methods, arrow-function constants,
interfaces and type aliases, with JSDoc first lines; ES module imports.

Relative import specifiers are resolved to repository paths without extension and
stored as ``path:src/util``; graph.py matches them to ``src/util.js``, ``src/util.ts``
or ``src/util/index.js``. Bare specifiers (``react``) name packages outside the
repository and never resolve. ``require()`` calls are not followed.
"""

from __future__ import annotations

import posixpath

from tree_sitter import Node

from selfforge.context.syntax import Definition, LanguageSpec, node_text, squash

SOURCE_EXTENSIONS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")
_FUNCTIONS = {"function_declaration", "generator_function_declaration"}
_CLASSES = {"class_declaration", "abstract_class_declaration", "interface_declaration"}
_TYPES = {"type_alias_declaration"}
_VARIABLES = {"lexical_declaration", "variable_declaration"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function"}
_METHODS = {"method_definition", "method_signature", "abstract_method_signature"}


def _doc_comment(node: Node, src: bytes) -> str:
    """First line of a ``/** ... */`` comment right above ``node``."""
    before = node.prev_named_sibling
    if before is None or before.type != "comment" or before.end_point[0] < node.start_point[0] - 1:
        return ""
    text = node_text(before, src)
    if not text.startswith("/**"):
        return ""
    for line in text.removeprefix("/**").removesuffix("*/").splitlines():
        line = line.strip().lstrip("*").strip()
        if line:
            return line[:200]
    return ""


def _definition(outer: Node, node: Node, kind: str, parent: str, src: bytes) -> Definition:
    body = node.child_by_field_name("body") or node.child_by_field_name("value")
    end = body.start_byte if body is not None else node.end_byte
    return Definition(
        name=node_text(node.child_by_field_name("name"), src),
        kind=kind,
        parent=parent,
        signature=squash(src[outer.start_byte : end].decode("utf-8", "replace")).rstrip("{= "),
        doc=_doc_comment(outer, src),
        line=outer.start_point[0] + 1,
        end_line=outer.end_point[0] + 1,
    )


def _statement(outer: Node, node: Node, src: bytes, out: list[Definition]) -> None:
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration")
        if inner is not None:
            _statement(outer, inner, src, out)
        return
    if node.type in _FUNCTIONS:
        out.append(_definition(outer, node, "function", "", src))
    elif node.type in _TYPES:
        out.append(_definition(outer, node, "type", "", src))
    elif node.type in _CLASSES:
        out.append(_definition(outer, node, "class", "", src))
        name = node_text(node.child_by_field_name("name"), src)
        body = node.child_by_field_name("body")
        for member in body.named_children if body is not None else ():
            if member.type in _METHODS:
                out.append(_definition(member, member, "method", name, src))
    elif node.type in _VARIABLES:
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                signature_end = value.child_by_field_name("body") or value
                head = src[outer.start_byte : signature_end.start_byte].decode("utf-8", "replace")
                out.append(
                    Definition(
                        name=node_text(declarator.child_by_field_name("name"), src),
                        kind="function",
                        parent="",
                        signature=squash(head).rstrip("{ "),
                        doc=_doc_comment(outer, src),
                        line=outer.start_point[0] + 1,
                        end_line=outer.end_point[0] + 1,
                    )
                )


def js_definitions(root: Node, src: bytes) -> list[Definition]:
    out: list[Definition] = []
    for child in root.named_children:
        _statement(child, child, src, out)
    return out


def js_imports(nodes: list[Node], src: bytes, path: str) -> list[str]:
    found: list[str] = []
    for node in sorted(nodes, key=lambda n: n.start_byte):
        source = node.child_by_field_name("source")
        if source is None:  # "export const x = ..." is not a re-export
            continue
        spec = node_text(source, src).strip("'\"`")
        found.append(resolve_specifier(spec, path))
    return list(dict.fromkeys(f for f in found if f))


def resolve_specifier(spec: str, path: str) -> str:
    """``./util.js`` imported from ``src/app.js`` -> ``path:src/util``; packages as they are."""
    if not spec.startswith("."):
        return spec
    target = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
    for extension in SOURCE_EXTENSIONS:
        if target.endswith(extension):
            target = target[: -len(extension)]
            break
    return f"path:{target}"


_IMPORTS = "[(import_statement) (export_statement)] @import"
_PROSE = "[(comment) (string) (template_string)] @prose"

JAVASCRIPT = LanguageSpec(
    name="javascript",
    extensions=(".js", ".mjs", ".cjs", ".jsx"),
    grammar_module="tree_sitter_javascript",
    definitions=js_definitions,
    imports=js_imports,
    import_query=_IMPORTS,
    prose_query=_PROSE,
)
TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=(".ts", ".mts", ".cts"),
    grammar_module="tree_sitter_typescript",
    grammar_attr="language_typescript",
    definitions=js_definitions,
    imports=js_imports,
    import_query=_IMPORTS,
    prose_query=_PROSE,
)
TSX = LanguageSpec(
    name="tsx",
    extensions=(".tsx",),
    grammar_module="tree_sitter_typescript",
    grammar_attr="language_tsx",
    definitions=js_definitions,
    imports=js_imports,
    import_query=_IMPORTS,
    prose_query=_PROSE,
)
