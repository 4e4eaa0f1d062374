"""What parsing produces, and how a language describes itself to the parser.

Kept apart from the per-language modules so each of them can depend on it without
depending on the others.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node


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
    imports: list[str] = field(default_factory=list)  # module candidates (see graph.py)
    references: Counter[str] = field(default_factory=Counter)  # names used in code
    words: Counter[str] = field(default_factory=Counter)  # every identifier-like word
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
    # captures the @prose nodes (comments, strings) whose words are not code references
    prose_query: str = "[(comment) (string)] @prose"
    grammar_attr: str = "language"
    module_doc: Callable[[Node, bytes], str] | None = None


def node_text(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def squash(text: str) -> str:
    """A multi-line signature on one line, as a person would write it there."""
    text = " ".join(text.split())
    return re.sub(r",?\s*([)\]])", r"\1", re.sub(r"([(\[])\s+", r"\1", text))
