"""Negatives for the judge: the gold change plus one small mutation that breaks a test.

A mutation changes one thing on a line the commit added: flips a comparison, a boolean,
an arithmetic sign or a 0/1 constant, drops a `not`, or makes a `return`/`yield` give
None. It is used only after a test run shows that it breaks one of the instance's
FAIL_TO_PASS or PASS_TO_PASS tests.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Tried in this order: comparisons and booleans change behaviour most surely.
SWAPS: list[dict[str, str]] = [
    {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"},
    {"True": "False", "False": "True", "and": "or", "or": "and"},
    {"+": "-", "-": "+", "0": "1", "1": "0"},
]
VALUE_RANK = 1  # `return x` -> `return None`, `yield x` -> `yield None`, `not x` -> `x`
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


@dataclass(frozen=True)
class Mutation:
    path: str
    line: int  # 1-based
    col: int
    old: str
    new: str

    def describe(self) -> str:
        return f"{self.path}:{self.line} {self.old!r} -> {self.new!r}"

    def apply(self, root: Path) -> str:
        """Write the mutated file; return the original text to restore."""
        target = root / self.path
        original = target.read_text(encoding="utf-8")
        lines = original.splitlines(keepends=True)
        text = lines[self.line - 1]
        lines[self.line - 1] = text[: self.col] + self.new + text[self.col + len(self.old) :]
        target.write_text("".join(lines), encoding="utf-8")
        return original


def added_lines(zero_context_diff: str) -> dict[str, set[int]]:
    """Post-image line numbers added per file, from ``git diff -U0``."""
    added: dict[str, set[int]] = {}
    current: str | None = None
    for line in zero_context_diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = name[2:] if name.startswith("b/") else None
            continue
        m = HUNK.match(line)
        if m and current:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            added.setdefault(current, set()).update(range(start, start + count))
    return added


def candidates(root: Path, added: dict[str, set[int]]) -> Iterator[Mutation]:
    """Mutations on added lines, most promising kind first, then by file and position."""
    found: list[tuple[int, Mutation]] = []
    for path in sorted(added):
        if not path.endswith(".py") and (root / path).is_file():
            found += [(rank, m) for rank, m in _c_like(path, (root / path).read_text(), added)]
            continue
        if not path.endswith(".py") or not (root / path).is_file():
            continue
        source = (root / path).read_text(encoding="utf-8")
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError):
            continue
        lines = source.splitlines()
        for tok in tokens:
            if tok.start[0] not in added[path] or tok.type not in (
                tokenize.OP,
                tokenize.NAME,
                tokenize.NUMBER,
            ):
                continue
            value = _value_mutation(path, tok, lines[tok.start[0] - 1])
            if value is not None:
                found.append((VALUE_RANK, value))
            for rank, table in enumerate(SWAPS):
                if tok.string in table:
                    mutation = Mutation(
                        path, tok.start[0], tok.start[1], tok.string, table[tok.string]
                    )
                    found.append((rank, mutation))
    found.sort(key=lambda item: (item[0], item[1].path, item[1].line, item[1].col))
    for _, mutation in found:
        yield mutation


# Go, Rust, JavaScript/TypeScript: strings and comments skipped; `<`/`>` only between
# spaces (elsewhere they are generics or arrows).
_C_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|`[^`]*`|'(?:\\.|[^'\\\n])'"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||=>|->|<-|\+\+|--|\+=|-=|<<|>>|::|[<>+\-!])"
    r"|(?P<word>\b(?:true|false|[01])\b)",
    re.S,
)
_C_SWAPS: list[dict[str, str]] = [
    {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"},
    {"true": "false", "false": "true", "&&": "||", "||": "&&"},
    {"+": "-", "-": "+", "0": "1", "1": "0"},
]


def _c_like(path: str, source: str, added: dict[str, set[int]]) -> Iterator[tuple[int, Mutation]]:
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    for m in _C_TOKEN.finditer(source):
        token = m.group("op") or m.group("word")
        if token is None:
            continue
        offset = m.start("op") if m.group("op") else m.start("word")
        row = _line_of(starts, offset)
        col = offset - starts[row - 1]
        if row not in added.get(path, set()):
            continue
        if token in ("<", ">") and not (
            source[offset - 1 : offset] == " " == source[offset + 1 : offset + 2]
        ):
            continue
        before = source[offset - 1 : offset]
        if token == "!":
            # not a Rust macro's or inner attribute's `!` (assert_eq!, #![no_std]): without
            # it nothing builds
            if not (before.isidentifier() or before == "#"):
                yield VALUE_RANK, Mutation(path, row, col, "!", "")
            continue
        if token in ("0", "1") and before == ".":
            continue  # a tuple's field (self.0): another one does not build
        for rank, table in enumerate(_C_SWAPS):
            if token in table:
                yield rank, Mutation(path, row, col, token, table[token])


def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)


def _value_mutation(path: str, tok: tokenize.TokenInfo, line: str) -> Mutation | None:
    row, col = tok.start
    if tok.string == "not" and line[col : col + 4] == "not ":
        return Mutation(path, row, col, "not ", "")
    if tok.string not in ("return", "yield"):
        return None
    rest = line[tok.end[1] :]
    body = rest.split("#")[0].strip()
    whole = sum(body.count(c) for c in "([{") == sum(body.count(c) for c in ")]}")
    if not body or body == "None" or body.startswith("from") or not whole:
        return None
    if body.endswith(("\\", ",", ":")):
        return None  # continues on the next line
    return Mutation(path, row, tok.end[1], rest, " None")


def find_breaking(
    root: Path,
    added: dict[str, set[int]],
    breaks_a_test: Callable[[], bool],
    tries: int = 8,
) -> Mutation | None:
    """The first mutation (of at most ``tries`` that compile) after which a test fails.

    ``root`` is left mutated by the mutation returned, and unchanged otherwise.
    """
    tried = 0
    for mutation in candidates(root, added):
        original = mutation.apply(root)
        try:
            if mutation.path.endswith(".py"):
                compile((root / mutation.path).read_text(encoding="utf-8"), mutation.path, "exec")
        except SyntaxError:
            (root / mutation.path).write_text(original, encoding="utf-8")
            continue
        tried += 1
        if breaks_a_test():
            return mutation
        (root / mutation.path).write_text(original, encoding="utf-8")
        if tried >= tries:
            break
    return None
