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
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        module = python_module_name(path) if path.endswith(".py") else None
        if path in tokens or (name in tokens and "." in name) or (module and module in tokens):
            found.files.add(path)
    for ident in identifiers(task):
        if len(ident) > 2 and ident.lower() not in STOPWORDS and ident in definers:
            found.identifiers.add(ident)
    return found
