"""Python: definitions with signatures and docstrings, and imports as dotted modules.

Relative imports are resolved against the file's own path, so ``from ..core import x``
in ``src/app/sub/mod.py`` is stored as ``src.app.core``; graph.py matches both that
full form and the importable one (``app.core``).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from selfforge.context.syntax import Definition, LanguageSpec
from selfforge.context.syntax import node_text as _text
from selfforge.context.syntax import squash as _squash

_STRING_PREFIX = re.compile(r"^[rRbBuUfF]*('''|\"\"\"|'|\")")


def _docstring(body: Node | None, src: bytes) -> str:
    if body is None or body.named_child_count == 0:
        return ""
    first = body.named_children[0]
    if first.type != "expression_statement" or first.named_child_count == 0:
        return ""
    node = first.named_children[0]
    if node.type != "string":
        return ""
    raw = _STRING_PREFIX.sub("", _text(node, src)).rstrip("'\"")
    for line in raw.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def _py_signature(node: Node, src: bytes) -> str:
    # Up to the colon that opens the body, so a comment after it stays out.
    colons = [c for c in node.children if c.type == ":"]
    end = colons[-1].start_byte if colons else node.end_byte
    text = src[node.start_byte : end]
    parameters = node.child_by_field_name("parameters") or node.child_by_field_name("superclasses")
    comments = [c for c in (parameters.children if parameters else []) if c.type == "comment"]
    # Comments inside a multi-line parameter list would run into the next parameter.
    for comment in reversed(comments):
        start, stop = comment.start_byte - node.start_byte, comment.end_byte - node.start_byte
        text = text[:start] + text[stop:]
    return _squash(text.decode("utf-8", "replace")).rstrip(":").strip()


def _py_definitions(block: Node, src: bytes, parent: str, out: list[Definition]) -> None:
    for child in block.named_children:
        node = child
        if child.type == "decorated_definition":
            node = child.child_by_field_name("definition")
        if node is None or node.type not in ("function_definition", "class_definition"):
            continue
        name = _text(node.child_by_field_name("name"), src)
        body = node.child_by_field_name("body")
        is_class = node.type == "class_definition"
        kind = "class" if is_class else ("method" if parent else "function")
        out.append(
            Definition(
                name=name,
                kind=kind,
                parent=parent,
                signature=_py_signature(node, src),
                doc=_docstring(body, src),
                line=child.start_point[0] + 1,
                end_line=child.end_point[0] + 1,
            )
        )
        if is_class and body is not None:
            _py_definitions(body, src, f"{parent}.{name}" if parent else name, out)


def python_module_name(path: str) -> str:
    """Dotted name from the repo-relative path: ``src/pkg/__init__.py`` -> ``src.pkg``."""
    parts = path[: -len(".py")].split("/") if path.endswith(".py") else path.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve_relative(prefix_dots: int, module: str, path: str) -> str:
    package = python_module_name(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    keep = len(package) - (prefix_dots - 1)
    base = package[: max(keep, 0)]
    return ".".join([*base, module] if module else base)


def _py_import(node: Node, src: bytes, path: str) -> list[str]:
    if node.type == "import_statement":
        names = node.children_by_field_name("name")
        return [_text(n.child_by_field_name("name") or n, src) for n in names]
    module_node = node.child_by_field_name("module_name")
    if module_node is None:
        return []
    if module_node.type == "relative_import":
        prefix = next((c for c in module_node.children if c.type == "import_prefix"), None)
        inner = next((c for c in module_node.named_children if c.type == "dotted_name"), None)
        module = _resolve_relative(_text(prefix, src).count("."), _text(inner, src), path)
    else:
        module = _text(module_node, src)
    found = [module] if module else []
    # "from pkg import sub" may name a submodule, so offer "pkg.sub" as a candidate too.
    for name in node.children_by_field_name("name"):
        leaf = _text(name.child_by_field_name("name") or name, src)
        found.append(f"{module}.{leaf}" if module else leaf)
    return found


def python_definitions(root: Node, src: bytes) -> list[Definition]:
    definitions: list[Definition] = []
    _py_definitions(root, src, "", definitions)
    return definitions


def python_imports(nodes: list[Node], src: bytes, path: str) -> list[str]:
    imports: list[str] = []
    for node in sorted(nodes, key=lambda n: n.start_byte):
        imports.extend(_py_import(node, src, path))
    return list(dict.fromkeys(i for i in imports if i))


PYTHON = LanguageSpec(
    name="python",
    extensions=(".py", ".pyi"),
    grammar_module="tree_sitter_python",
    definitions=python_definitions,
    imports=python_imports,
    import_query="[(import_statement) (import_from_statement)] @import",
    module_doc=_docstring,
)
