"""Real code nobody on this project wrote: excerpts of the installed standard library.

Windows are picked so the intended place is unambiguous even to the loosest matcher
(unique after stripping every line), which is what makes a sloppy reply "recoverable".
"""

from __future__ import annotations

import random
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

MARKERS = re.compile(r"^\s*(<{5,9}|={5,9}|>{5,9}|`{3,}|~{3,}|@@|--- |\+\+\+ )")
ELISION_LIKE = re.compile(r"^\s*(#|//)?\s*(\.\.\.|…)")


@dataclass(frozen=True)
class Source:
    rel: str  # where the file sits in a case's repository
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")[:-1]


def load_sources(rng: random.Random, count: int) -> list[Source]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py"))
    paths = [p for p in paths if "test" not in p.as_posix() and "site-packages" not in p.parts]
    rng.shuffle(paths)
    found: list[Source] = []
    for path in paths:
        text = _usable(path)
        if text is not None:
            found.append(Source(path.relative_to(stdlib).as_posix(), text))
        if len(found) >= count:
            break
    return found


UNDERLINE = re.compile(r"^[ \t]*={5,9}[ \t]*$", re.MULTILINE)
SR_MARKER = re.compile(r"^\s*(<{5,9}|>{5,9})", re.MULTILINE)


def load_underlined(rng: random.Random, count: int) -> list[Source]:
    """Installed third-party code whose docstrings have `=====` underlines: these lines
    look like SEARCH/REPLACE dividers, the hardest case for the parser."""
    roots = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["stdlib"])}
    paths: list[Path] = []
    for root in sorted(roots):
        site = root if root.name == "site-packages" else root / "site-packages"
        paths += sorted(site.glob("*/*.py"))[:4000] + sorted(site.glob("*/*/*.py"))[:4000]
    rng.shuffle(paths)
    found: list[Source] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if UNDERLINE.search(text) and not SR_MARKER.search(text) and "\r" not in text:
            found.append(Source(f"lib/{path.parent.name}/{path.name}", text))
        if len(found) >= count:
            break
    return found


def _usable(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    n = text.count("\n")
    if not 60 <= n <= 2500 or "\t" in text or "\r" in text or "\x0c" in text:
        return None
    if not text.endswith("\n") or text.endswith("\n\n"):
        return None
    if any(MARKERS.match(line) for line in text.split("\n")):
        return None  # fences or markers inside the code would confuse any reply format
    return text


def stripped_count(lines: list[str], window: list[str]) -> int:
    needle = [x.strip() for x in window]
    hay = [x.strip() for x in lines]
    first, m = needle[0], len(needle)
    return sum(1 for i in range(len(hay) - m + 1) if hay[i] == first and hay[i : i + m] == needle)


def pick_window(
    rng: random.Random,
    lines: list[str],
    size: int,
    *,
    min_indent: int = 0,
    avoid: set[int] = frozenset(),  # type: ignore[assignment]
    tries: int = 200,
) -> int | None:
    """Start of a window of ``size`` lines that is unique even after stripping each line."""
    for _ in range(tries):
        start = rng.randrange(0, max(1, len(lines) - size))
        window = lines[start : start + size]
        if len(window) < size or any(i in avoid for i in range(start - 1, start + size + 1)):
            continue
        if not window[0].strip() or not window[-1].strip():
            continue
        if any(ELISION_LIKE.match(x) for x in window):
            continue
        indents = [len(x) - len(x.lstrip()) for x in window if x.strip()]
        if min(indents) < min_indent or sum(1 for x in window if x.strip()) < 2:
            continue
        if stripped_count(lines, window) == 1:
            return start
    return None


def repeated_window(rng: random.Random, lines: list[str], size: int) -> int | None:
    """Start of a window that occurs at least twice exactly: a SEARCH that must be refused."""
    seen: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(lines) - size + 1):
        window = tuple(lines[i : i + size])
        if all(len(x.strip()) >= 6 for x in window):
            seen.setdefault(window, []).append(i)
    repeated = [starts[0] for starts in seen.values() if len(starts) >= 2]
    return rng.choice(repeated) if repeated else None
