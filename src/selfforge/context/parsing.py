"""Parse a source file into definitions, imports and references with tree-sitter.

Each language is one ``LanguageSpec`` row in ``LANGUAGES``: its file extensions, the
grammar package that provides it, and a function that pulls definitions and imports
out of the syntax tree. Adding a language means adding a row (and, if the generic
node-type extractor does not fit, a small extractor); a grammar package that is not
installed just leaves that language unparsed.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str  # "function", "class" or "method"
    parent: str  # enclosing class, "" at module level
    signature: str
    doc: str  # first line of the docstring
    line: int  # 1-based
    end_line: int


@dataclass
class ParsedFile:
    lang: str
    definitions: list[Definition] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # dotted module candidates
    references: Counter[str] = field(default_factory=Counter)
    lines: int = 0
    doc: str = ""  # first line of the module docstring


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    extensions: tuple[str, ...]
    grammar_module: str  # the pip package's import name, e.g. "tree_sitter_python"
    definitions: Callable[[Node, bytes], list[Definition]]
    # (captured import nodes, source, repo-relative path) -> dotted module candidates
    imports: Callable[[list[Node], bytes, str], list[str]]
    import_query: str  # captures @import nodes
    identifier_query: str = "(identifier) @id"  # captures @id nodes
    grammar_attr: str = "language"
    module_doc: Callable[[Node, bytes], str] | None = None


def _text(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _squash(text: str) -> str:
    return " ".join(text.split())


# --- Python -----------------------------------------------------------------------------

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
    return _squash(src[node.start_byte : end].decode("utf-8", "replace")).rstrip(":").strip()


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


@cache
def _query(spec_name: str, source: str) -> Query:
    return Query(load_language(spec_name), source)


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

LANGUAGES: tuple[LanguageSpec, ...] = (PYTHON,)


# --- loading and parsing ----------------------------------------------------------------


def spec_for(path: str) -> LanguageSpec | None:
    """The language of ``path`` if its grammar package is installed."""
    for spec in LANGUAGES:
        if path.endswith(spec.extensions) and _grammar_available(spec.name):
            return spec
    return None


@cache
def _grammar_available(name: str) -> bool:
    try:
        load_language(name)
    except ImportError:
        return False
    return True


@cache
def load_language(name: str) -> Language:
    spec = next(s for s in LANGUAGES if s.name == name)
    module = importlib.import_module(spec.grammar_module)
    return Language(getattr(module, spec.grammar_attr)())


@cache
def _parser(name: str) -> Parser:
    return Parser(load_language(name))


def parse_source(path: str, src: bytes, spec: LanguageSpec) -> ParsedFile:
    """Definitions, imports and identifier references of one file."""
    tree = _parser(spec.name).parse(src)
    # One query walks the tree once for both imports and identifiers.
    query = _query(spec.name, f"{spec.import_query}\n{spec.identifier_query}")
    captures = QueryCursor(query).captures(tree.root_node)
    references: Counter[str] = Counter(
        src[n.start_byte : n.end_byte].decode("utf-8", "replace") for n in captures.get("id", [])
    )
    return ParsedFile(
        lang=spec.name,
        definitions=spec.definitions(tree.root_node, src),
        imports=spec.imports(captures.get("import", []), src, path),
        references=references,
        lines=src.count(b"\n") + 1,
        doc=spec.module_doc(tree.root_node, src) if spec.module_doc else "",
    )
