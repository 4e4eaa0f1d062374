"""Parse a source file into definitions, imports and references with tree-sitter.

Each language is one ``LanguageSpec`` row in ``LANGUAGES`` (see syntax.py): its file
extensions, the grammar package that provides it, and functions that pull definitions
and imports out of the syntax tree (lang_python.py, lang_javascript.py). Adding a
language means writing those two functions and adding a row; a grammar package that is
not installed just leaves that language's files unparsed (indexed by path only).
"""

from __future__ import annotations

import importlib
from collections import Counter
from functools import cache

from tree_sitter import Language, Parser, Query, QueryCursor

from selfforge.context.lang_javascript import JAVASCRIPT, TSX, TYPESCRIPT
from selfforge.context.lang_python import PYTHON, python_module_name
from selfforge.context.syntax import Definition, LanguageSpec, ParsedFile

__all__ = [
    "LANGUAGES",
    "Definition",
    "LanguageSpec",
    "ParsedFile",
    "parse_source",
    "python_module_name",
    "spec_for",
]

LANGUAGES: tuple[LanguageSpec, ...] = (PYTHON, JAVASCRIPT, TYPESCRIPT, TSX)


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
