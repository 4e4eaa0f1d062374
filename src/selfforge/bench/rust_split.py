"""Rust keeps tests inside its sources: ``#[cfg(test)] mod`` blocks and the examples in
doc comments (doctests). To mine a commit as "tests first, then the code", each changed
source is split: its tests-first state holds the parent's code with the commit's tests,
and the gold change is what remains."""

from __future__ import annotations

import difflib
import re

from selfforge.judge.rules.integrity_lang import INLINE_TESTS

DOC_LINE = re.compile(r"^\s*//[/!](?!/)")  # `///` or `//!`, not `////`
FENCE = re.compile(r"^\s*//[/!]\s*(```|~~~)")


def split_inline(parent: str, commit: str) -> str | None:
    """The parent's Rust source with the commit's inline test modules in place of its
    own: the tests-first state of a file whose commit changed both code and tests. None
    when the tests did not change or the modules do not pair up (rustfmt's layout is
    assumed: a top-level ``#[cfg(test)] mod x {`` closed by a ``}`` alone on a line)."""
    old, new = INLINE_TESTS.findall(parent), INLINE_TESTS.findall(commit)
    if old == new or not new or len(old) not in (0, len(new)):
        return None
    if not old:
        return parent.rstrip("\n") + "\n\n" + "\n".join(new)
    pieces = INLINE_TESTS.split(parent)
    return "".join(p + (new[i] if i < len(new) else "") for i, p in enumerate(pieces))


# A test module kept in a file of its own: ``#[cfg(test)]`` then ``mod tests;``.
TEST_DECLARATION = re.compile(r"(?m)^#\[cfg\(test\)\]\n(?:#\[.*\]\n)*mod \w+;\n")


def split_test_declarations(first: str, commit: str) -> str:
    """``first`` with the test modules the commit declares (``#[cfg(test)] mod tests;``,
    whose tests are in ``src/tests.rs``) and ``first`` does not: the declaration belongs
    with the tests, or they would not build in the tests-first state and the gold change
    would have to guess it."""
    missing = [d for d in TEST_DECLARATION.findall(commit) if d not in first]
    if not missing:
        return first
    return first.rstrip("\n") + "\n\n" + "".join(missing)


def split_doc_examples(first: str, commit: str) -> str:
    """``first`` with the commit's changes to doc examples applied and nothing else: a
    change whose lines (on both sides) are all doc comments, one of them inside or
    fencing a code example. A doc example is a test (cargo runs it), so adding, changing
    or deleting one belongs with the tests, not with the gold code change."""
    old, new = first.splitlines(keepends=True), commit.splitlines(keepends=True)
    in_old, in_new = _example_lines(old), _example_lines(new)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        take_new = op != "equal" and (
            all(DOC_LINE.match(line) for line in old[i1:i2] + new[j1:j2])
            and any(in_old[i1:i2]) | any(in_new[j1:j2])
        )
        out.extend(new[j1:j2] if take_new else old[i1:i2])
    return "".join(out)


def _example_lines(lines: list[str]) -> list[bool]:
    """For each line: is it a fence of, or inside, a code example in a doc comment?"""
    marks, inside = [], False
    for line in lines:
        if not DOC_LINE.match(line):
            inside = False  # a doc block ends with the comment
            marks.append(False)
            continue
        fence = bool(FENCE.match(line))
        marks.append(inside or fence)
        if fence:
            inside = not inside
    return marks
