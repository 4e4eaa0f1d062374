"""What a task names outright: files (by path, file name or module) and defined symbols."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from selfforge.context.parsing import python_module_name
from selfforge.context.words import STOPWORDS, identifiers

_PATHISH = re.compile(r"[\w./-]+")


@dataclass
class Mentions:
    files: set[str] = field(default_factory=set)
    identifiers: set[str] = field(default_factory=set)


def find_mentions(task: str, paths: Iterable[str], definers: Mapping[str, set[str]]) -> Mentions:
    tokens = {t.strip(".,:;()`'\"") for t in _PATHISH.findall(task)}
    # "shutil.copytree" names the module "shutil" too.
    tokens |= {t.rsplit(".", 1)[0] for t in tokens if "." in t}
    tokens.discard("")
    found = Mentions()
    partial_paths = [t for t in tokens if "/" in t]
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        module = python_module_name(path) if path.endswith(".py") else None
        if path in tokens or (name in tokens and "." in name) or (module and module in tokens):
            found.files.add(path)
        elif any(path.endswith("/" + t.lstrip("/")) for t in partial_paths):
            found.files.add(path)  # "writers/html5/__init__.py" names a path by its tail
    for ident in identifiers(task):
        if ident in definers and looks_like_code(ident, task):
            found.identifiers.add(ident)
    return found


def looks_like_code(ident: str, task: str) -> bool:
    """An identifier written as code, not an English word that happens to be a name.

    "image" in "image scaling fails" is prose even if a class is called ``image``;
    ``image_uri``, ``ImageReader``, ``image()`` and ```image``` are code.
    """
    if len(ident) < 3 or ident.lower() in STOPWORDS:
        return False
    if "_" in ident.strip("_") or any(c.isdigit() for c in ident):
        return True
    if any(c.isupper() for c in ident[1:]) or (ident[0].isupper() and ident.isupper()):
        return True
    return bool(
        re.search(rf"(`{re.escape(ident)}`|{re.escape(ident)}\(|\.{re.escape(ident)}\b)", task)
    )
