"""Which test of one run is which test of another, when the id alone does not say: a
parameter that embeds the time (``results.realign``), a doctest that follows its renamed
item, a target written without its file (``tests::adds``, ``TestTax``)."""

from __future__ import annotations

import re

from selfforge.judge.runners.results import DOCTESTS, TestReport, realign, worst


def same_tests(base: TestReport, cand: TestReport, diff: str = "") -> dict[str, str]:
    """The id in ``cand`` of each test of ``base`` that ``cand`` knows by another id."""
    then, now = list(base.outcomes), list(cand.outcomes)
    return {**realign(then, now), **renamed_doctests(then, now, diff)}


_DOCTEST = re.compile(r"^" + re.escape(DOCTESTS) + r"(?P<file>.+?) - (?P<item>.*)$")
_DEFINES = re.compile(
    r"^[-+](?!--|\+\+).*?\b(?:fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)"
    r"\s+(\w+)",
    re.M,
)


def renamed_doctests(then: list[str], now: list[str], diff: str) -> dict[str, str]:
    """The doctests of an item the change renamed, under their new id. A doctest is named
    after the item it documents (``src/lib.rs - Pair<A,B>::swap``), so renaming ``swap``
    to ``flip`` makes it look gone while ``... - Pair<A,B>::flip`` appears. It is the same
    test when the two ids differ only in names whose definitions the diff of that file
    removes (``fn swap``) and adds (``fn flip``). Chosen over matching the example's text:
    the report holds no text, and a doc example is the candidate's code in the judging run
    anyway (an edited example under the same name is already judged as it is), so
    following a rename opens nothing that was closed; anything else that disappears is
    still a regression."""
    renames = _renames_by_file(diff)
    if not renames:
        return {}
    old, new = set(then), set(now)
    appeared = [t for t in now if t not in old and _DOCTEST.match(t)]
    found: dict[str, str] = {}
    for test in then:
        m = _DOCTEST.match(test)
        if test in new or m is None or m["file"] not in renames:
            continue
        removed, added = renames[m["file"]]
        for other in appeared:
            n = _DOCTEST.match(other)
            if (
                n
                and n["file"] == m["file"]
                and other not in found.values()
                and _renamed(m["item"], n["item"], removed, added)
            ):
                found[test] = other
                break
    return found


def _renamed(was: str, now: str, removed: set[str], added: set[str]) -> bool:
    a, b = re.split(r"(\w+)", was), re.split(r"(\w+)", now)
    if len(a) != len(b) or a == b:
        return False
    return all(x == y or (x in removed and y in added) for x, y in zip(a, b, strict=True))


def _renames_by_file(diff: str) -> dict[str, tuple[set[str], set[str]]]:
    """Per file of a git diff: the names it stops defining, and those it starts to."""
    found = {}
    for part in re.split(r"^diff --git ", diff, flags=re.M)[1:]:
        m = re.search(r"^\+\+\+ b/(.+)$", part, re.M)
        if m is None:
            continue
        gone = {n for sign, n in _defs(part) if sign == "-"}
        made = {n for sign, n in _defs(part) if sign == "+"}
        if gone - made and made - gone:
            found[m.group(1)] = (gone - made, made - gone)
    return found


def _defs(part: str) -> list[tuple[str, str]]:
    return [(m.group(0)[0], m.group(1)) for m in _DEFINES.finditer(part)]


def find_outcome(report: TestReport | None, test: str) -> str | None:
    """A target's outcome in a report: by its id, or, for an id written without its file
    (``tests::adds``, Go's ``TestTax``), the worst outcome of the tests whose id ends with
    it."""
    if report is None:
        return None
    found = report.outcome(test)
    head = test.split("::")[0]
    if found is not None or "." in head or "/" in head or head.startswith("<"):
        return found
    held = [o for t, o in report.outcomes.items() if t.endswith("::" + test)]
    return worst(held) if held else None
