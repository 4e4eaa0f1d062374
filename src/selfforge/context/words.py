"""Splitting code and prose into search words, shared by the index and the queries.

Both sides must split the same way or BM25 cannot match ``ContextBundle`` in a task
against ``context_bundle`` in code.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")

_STOPWORD_TEXT = """a an and are as at be but by can do does for from has have if in into is it its
    make makes made not of on or so than that the their them then there these this to
    use used uses using was were when where which while will with without would add
    added adds fix fixed fixes fixing allow allows support new now also should"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=65536)  # the same names recur across thousands of files
def split_identifier(name: str) -> tuple[str, ...]:
    """Lower-case parts of an identifier: ``HTTPServer_v2`` -> ``("http", "server", "v2")``."""
    parts: list[str] = []
    for chunk in name.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return tuple(parts)


def identifiers(text: str) -> list[str]:
    """Identifier-like words in ``text``, as written."""
    return _WORD.findall(text)


@lru_cache(maxsize=131072)
def _expand(ident: str) -> tuple[str, ...]:
    lower = ident.lower().strip("_")
    if not lower:
        return ()
    parts = split_identifier(ident)
    return (lower, *parts) if len(parts) > 1 else (lower,)


def search_words(text: str) -> list[str]:
    """Every identifier in ``text`` whole (lower-cased) and split into its parts."""
    return [word for ident in identifiers(text) for word in _expand(ident)]


def expand_counts(identifier_counts: Counter[str]) -> Counter[str]:
    """Search-word counts from identifier counts: each distinct identifier is split once,
    not once per occurrence."""
    counts: Counter[str] = Counter()
    for ident, n in identifier_counts.items():
        for word in _expand(ident):
            counts[word] += n
    return counts


def query_words(text: str) -> list[str]:
    """Distinct search words of a task, without stopwords, in order of appearance."""
    return list(dict.fromkeys(w for w in search_words(text) if w not in STOPWORDS and len(w) > 1))


def match_any(words: list[str]) -> str:
    """An FTS5 query matching rows with any of ``words``, each quoted as a phrase."""
    return " OR ".join(f'"{w}"' for w in words)
