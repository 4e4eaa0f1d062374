"""Parse a source file into definitions, imports and references with tree-sitter.

Each language is one ``LanguageSpec`` row in ``LANGUAGES`` (see syntax.py): its file
extensions, the grammar package that provides it, and functions that pull definitions
and imports out of the syntax tree (lang_python.py, lang_javascript.py, lang_go.py,
lang_rust.py). Adding a
language means writing those two functions and adding a row; a grammar package that is
not installed just leaves that language's files unparsed (indexed by path only).
"""

from __future__ import annotations

import importlib
from collections import Counter
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from selfforge.context.lang_go import GO
from selfforge.context.lang_javascript import JAVASCRIPT, TSX, TYPESCRIPT
from selfforge.context.lang_python import PYTHON, python_module_name
from selfforge.context.lang_rust import RUST
from selfforge.context.syntax import Definition, LanguageSpec, ParsedFile
from selfforge.context.words import identifiers

__all__ = [
    "LANGUAGES",
    "Definition",
    "LanguageSpec",
    "ParsedFile",
    "parse_source",
    "python_module_name",
    "spec_for",
]

LANGUAGES: tuple[LanguageSpec, ...] = (PYTHON, JAVASCRIPT, TYPESCRIPT, TSX, GO, RUST)


@cache
def _query(spec_name: str, source: str) -> Query:
    return Query(load_language(spec_name), source)


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
    """Definitions, imports and references of one file.

    References are the identifier-like words of the file outside the comments and
    strings tree-sitter finds. Counting words once with a regex and taking away the few
    prose nodes costs a fraction of capturing every identifier node, the largest cost of
    a cold index after parsing itself.
    """
    tree = _parser(spec.name).parse(src)
    # One query walks the tree once for both imports and prose.
    query = _query(spec.name, f"{spec.import_query}\n{spec.prose_query}")
    captures = QueryCursor(query).captures(tree.root_node)
    words = Counter(identifiers(src.decode("utf-8", "replace")))
    prose: Counter[str] = Counter()
    for node in _outermost(captures.get("prose", [])):
        prose.update(identifiers(src[node.start_byte : node.end_byte].decode("utf-8", "replace")))
    references = Counter({w: n for w, n in (words - prose).items() if not w[0].isdigit()})
    return ParsedFile(
        lang=spec.name,
        definitions=spec.definitions(tree.root_node, src),
        imports=spec.imports(captures.get("import", []), src, path),
        references=references,
        words=words,
        lines=src.count(b"\n") + 1,
        doc=spec.module_doc(tree.root_node, src) if spec.module_doc else "",
    )


def _outermost(nodes: list[Node]) -> list[Node]:
    """Nodes not inside another one (a string within an f-string's braces, say)."""
    kept: list[Node] = []
    end = -1
    for node in sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte)):
        if node.start_byte >= end:
            kept.append(node)
            end = node.end_byte
    return kept
