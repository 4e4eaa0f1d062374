"""What a bench case is, and the helpers every generator shares."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from edit_corpus.source import Source, pick_window


@dataclass
class Case:
    kind: str
    refuse: bool
    files: dict[str, str]
    reply: str
    expected: dict[str, str | None] = field(default_factory=dict)  # None: deleted
    protected: tuple[str, ...] = ()
    outside_link: str | None = None  # a symlink of this name leading out of the repo


def text(lines: list[str]) -> str:
    return "".join(x + "\n" for x in lines)


def modify(window: list[str], n: int) -> list[str]:
    """A realistic change: a new line after the first, and the last line edited."""
    nxt = next((x for x in window[1:] if x.strip()), window[0])
    indent = nxt[: len(nxt) - len(nxt.lstrip())]
    new = [window[0], f"{indent}_sf_edit_{n} = {n}", *window[1:]]
    new[-1] = new[-1] + "  # sf-changed"
    return new


def sr(path_line: str, search: list[str], replace: list[str], marker: int = 7) -> str:
    return (
        f"{path_line}\n{'<' * marker} SEARCH\n{text(search)}{'=' * marker}\n"
        f"{text(replace)}{'>' * marker} REPLACE\n"
    )


def window(rng: random.Random, src: Source, size: int | None = None, **kw) -> tuple | None:
    lines = src.lines
    size = size or rng.randint(2, 7)
    start = pick_window(rng, lines, size, **kw)
    if start is None:
        return None
    return lines, start, start + size
