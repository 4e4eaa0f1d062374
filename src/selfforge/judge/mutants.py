"""Mutants: one small change on a line a commit added, the one home of the machinery.

A mutation changes one thing on such a line: flips a comparison, a boolean, an
arithmetic sign or a 0/1 constant, drops a `not` (`!`), makes a Python `return`/`yield`
give None or an `except` catch nothing, and, last, drops an assignment to a field or
element (or an augmented one) or empties a string literal. Python is read with its
tokenizer; Go, Rust and JavaScript/TypeScript with one C-like scan that skips strings and
comments. Two users: the judge asks whether a test a change adds can fail
(judge/new_tests.py: a test no mutant of the change's lines fails checks nothing the
change does), and the bench plants bugs with it (``find_breaking``: bench/mine.py's
negatives, bench/gate_cheats.py's cheats).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

# Tried in this order: comparisons and booleans change behaviour most surely.
SWAPS: list[dict[str, str]] = [
    {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"},
    {"True": "False", "False": "True", "and": "or", "or": "and"},
    {"+": "-", "-": "+", "*": "/", "/": "*", "0": "1", "1": "0"},
    # last: `is`/`in` negated (`is not` then reads `is not not`, which does not compile)
    {"is": "is not", "in": "not in"},
]
# Operators mutated only between spaces (a binary operator as formatters write it): not a
# generic's `<T>`, a pointer's or a glob's `*`, an unpacking `*args`.
SPACED = ("<", ">", "*", "/")  # Python: only `*` and `/` (its `<` is always one)
# Last: an assignment to a field, element or running total dropped, a string emptied:
# what a change made only of assignments and constants (no operator) still gives.
REMOVAL_RANK = len(SWAPS)
VALUE_RANK = 1  # `return x` -> `return None`, `yield x` -> `yield None`, `not x` -> `x`
# The files a mutant is drawn in: Python and the C-like languages the scan reads.
SUFFIXES = (".py", ".go", ".rs", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
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
        target.write_text(self.applied(original), encoding="utf-8")
        return original

    def undone(self) -> Mutation:
        """The mutation that takes this one back, on the mutated file."""
        return Mutation(self.path, self.line, self.col, self.new, self.old)

    def applied(self, original: str) -> str:
        """The file's text ``original`` with this mutation made."""
        lines = original.splitlines(keepends=True)
        text = lines[self.line - 1]
        lines[self.line - 1] = text[: self.col] + self.new + text[self.col + len(self.old) :]
        return "".join(lines)

    def compiles(self, mutated: str) -> bool:
        """Whether the mutated text still parses (Python's; any other language's is
        known only by building it: a test run that reports no outcome for a test)."""
        if not self.path.endswith(".py"):
            return True
        try:
            compile(mutated, self.path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
        return True


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


Reader = Callable[[str], str]  # a file's text by its path (raises OSError or ValueError)


def candidates(
    root: Path, added: dict[str, set[int]], read: Reader | None = None
) -> Iterator[Mutation]:
    """Mutations on added lines, most promising kind first, then by file and position;
    the files read under ``root``, or by ``read`` (the judge's: through repo/treefiles)."""
    found: list[tuple[int, Mutation]] = []
    for path in sorted(added):
        try:
            source = read(path) if read else (root / path).read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        found += _removals(path, source, added[path])
        if not path.endswith(".py"):
            found += [(rank, m) for rank, m in _c_like(path, source, added)]
            continue
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError):
            continue
        lines = source.splitlines()
        found += _python_strings(path, tokens, lines, added[path])
        for tok in tokens:
            if tok.start[0] not in added[path] or tok.type not in (
                tokenize.OP,
                tokenize.NAME,
                tokenize.NUMBER,
            ):
                continue
            line = lines[tok.start[0] - 1]
            col = tok.start[1]
            if tok.string in ("*", "/") and not (
                line[col - 1 : col] == " " == line[col + 1 : col + 2]
            ):
                continue
            value = _value_mutation(path, tok, line)
            if value is not None:
                found.append((VALUE_RANK, value))
            if tok.string == "except" and tok.type == tokenize.NAME:
                handler = _handler_mutation(path, tok, line)
                if handler is not None:
                    found.append((VALUE_RANK, handler))
            for rank, table in enumerate(SWAPS):
                if tok.string in table:
                    mutation = Mutation(
                        path, tok.start[0], tok.start[1], tok.string, table[tok.string]
                    )
                    found.append((rank, mutation))
    found.sort(key=lambda item: (item[0], item[1].path, item[1].line, item[1].col))
    for _, mutation in found:
        yield mutation


def spread(mutations: Iterable[Mutation]) -> list[Mutation]:
    """``mutations`` (best kind first) reordered so that every line's first comes before
    any line's second, and, among those, each file's first line before any file's second:
    a few tries reach as many of the files and lines as they can (a change to five files
    whose first has a dozen comparisons still has its other four tried)."""
    seen: dict[tuple[str, int], int] = {}
    lines_of: dict[str, dict[int, int]] = {}  # per file: its lines, in order of first sight
    ranked = []
    for order, mutation in enumerate(mutations):
        at = (mutation.path, mutation.line)
        seen[at] = seen.get(at, -1) + 1
        lines = lines_of.setdefault(mutation.path, {})
        lines.setdefault(mutation.line, len(lines))
        ranked.append((seen[at], lines[mutation.line], order, mutation))
    return [m for *_, m in sorted(ranked, key=lambda r: r[:3])]


def nearest(mutations: list[Mutation], tests: Iterable[str]) -> Mutation:
    """The first of ``mutations`` (not empty) in a file whose name the id of one of
    ``tests`` holds (``calc.py`` for ``tests/test_calc.py::test_add``), else the first:
    the mutant most likely to reach a test still to prove."""
    ids = [t.split("::")[0].lower() for t in tests]
    for mutation in mutations:
        stem = PurePosixPath(mutation.path).stem.lower()
        if (
            len(stem) > 2
            and stem not in ("index", "main", "lib", "mod", "__init__")
            and any(stem in i for i in ids)
        ):
            return mutation
    return mutations[0]


_PY_DEF = r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+({names})\b"
# A Go func or method, a Rust fn, a JS/TS function, method or arrow bound to a name.
_C_DEF = (
    r"^[ \t]*(?:func(?:[ \t]*\([^)]*\))?[ \t]+({names})\b"
    r"|(?:pub(?:\([\w:]+\))?[ \t]+)?(?:const[ \t]+|async[ \t]+|unsafe[ \t]+)*fn[ \t]+({names})\b"
    r"|(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\*?[ \t]+({names})\b"
    r"|(?:export[ \t]+)?(?:const|let|var)[ \t]+({names})[ \t]*(?::[^=]*)?=[^=>]*(?:=>|function)"
    r"|(?:(?:public|private|protected|static|async|get|set)[ \t]+)*"
    r"({names})[ \t]*\([^;]*\)[^;]*\{{[ \t]*$)"
)


def named_lines(files: Iterable[str], names: set[str], read: Reader) -> dict[str, set[int]]:
    """The lines of the definitions (functions, methods, classes) named ``names`` in
    ``files`` (their bodies, the line that names each left out): where a change that adds
    only tests reaches the code, as far as a reading of the names tells."""
    names = {n for n in names if n.isidentifier() and len(n) > 1}
    found: dict[str, set[int]] = {}
    if not names:
        return found
    alternatives = "|".join(sorted(map(re.escape, names)))
    python = re.compile(_PY_DEF.format(names=alternatives), re.M)
    c_like = re.compile(_C_DEF.format(names=alternatives), re.M)
    for path in files:
        try:
            source = read(path)
        except (OSError, ValueError):
            continue
        scan = python if path.endswith(".py") else c_like
        lines = source.splitlines()
        spans: set[int] = set()
        for m in scan.finditer(source):
            row = source.count("\n", 0, m.start()) + 1
            end = _block_end(lines, row, path.endswith(".py"))
            spans.update(range(row + 1, end + 1))
        if spans:
            found[path] = spans
    return found


def _block_end(lines: list[str], row: int, python: bool) -> int:
    """The last line (1-based) of the definition that starts on ``row``: by indentation
    in Python, by braces elsewhere (strings not told apart: a guess that only chooses
    where mutants are tried)."""
    head = lines[row - 1]
    if python:
        indent = len(head) - len(head.lstrip())
        end = row
        for at in range(row, len(lines)):
            text = lines[at]
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break
            if text.strip():
                end = at + 1
        return end
    depth, opened = 0, False
    for at in range(row - 1, len(lines)):
        for ch in lines[at]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
        if opened and depth <= 0:
            return at + 1
    return row


# Go, Rust, JavaScript/TypeScript: strings and comments skipped; `<`/`>` only between
# spaces (elsewhere they are generics or arrows).
_C_OPS = (
    r"|(?P<op>==|!=|<=|>=|&&|\|\||=>|->|<-|\+\+|--|\+=|-=|\*=|/=|<<|>>|::|[<>+\-!*/])"
    r"|(?P<word>\b(?:true|false|[01])\b)"
)
# A quote is a char literal in Go and Rust (one character: Rust's lifetimes `'a` are
# no string), a string in JavaScript/TypeScript.
_C_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|`[^`]*`|'(?:\\.|[^'\\\n])'" + _C_OPS,
    re.S,
)
_JS_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|`(?:\\.|[^`\\])*`|'(?:\\.|[^'\\\n])*'" + _C_OPS,
    re.S,
)
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
_C_SWAPS: list[dict[str, str]] = [
    {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"},
    {"true": "false", "false": "true", "&&": "||", "||": "&&"},
    {"+": "-", "-": "+", "*": "/", "/": "*", "0": "1", "1": "0"},
]


def _c_like(path: str, source: str, added: dict[str, set[int]]) -> Iterator[tuple[int, Mutation]]:
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    scan = _JS_TOKEN if path.endswith(_JS_SUFFIXES) else _C_TOKEN
    for m in scan.finditer(source):
        token = m.group("op") or m.group("word")
        if token is None:
            continue
        offset = m.start("op") if m.group("op") else m.start("word")
        row = _line_of(starts, offset)
        col = offset - starts[row - 1]
        if row not in added.get(path, set()):
            continue
        if token in SPACED and not (
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


# An assignment statement inside a body: to a field or an element, or an augmented one
# (`x += 1`); never a declaration (`let`, `const`, `var`, `:=`), whose removal leaves a
# later use of its name unbuilt, nor a plain Python name, which would fail by NameError.
_PY_ASSIGN = re.compile(
    r"^[ \t]+(?P<stmt>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]\n]*\])+[ \t]*=(?!=)[^\n]*\S"
    r"|[A-Za-z_][\w.]*[ \t]*(?:[-+*/%|&^@]|//|\*\*|<<|>>)=[^\n]*\S)[ \t]*$"
)
_C_ASSIGN = re.compile(
    r"^[ \t]+(?P<stmt>(?!(?:let|const|var|static|return)\b)[*]?[A-Za-z_]\w*"
    r"(?:\.[A-Za-z_]\w*|\[[^\]\n]*\])*[ \t]*(?:[-+*/%|&^]|<<|>>)?=(?![=>])[^\n]*)$"
)
_PY_STRING = re.compile(r"""^[rRbBuU]{0,2}(['"])(?!\1\1)(?:\\.|[^\\\n])+?\1$""")
# lines whose strings are names a build needs: imports, attributes, a Go import block's
_NO_STRINGS = re.compile(
    r"^\s*(?:import\b|use\b|package\b|#|@|extern\b|mod\b|\"[^\"]*\"\s*$)|require\("
)


def _removals(path: str, source: str, added: set[int]) -> list[tuple[int, Mutation]]:
    """On ``added`` lines: an assignment statement dropped (Python's made ``pass``), and
    in Go, Rust and JS/TS a non-empty string literal emptied (not in a comment, an import
    or an attribute; Python's strings: ``_python_strings``)."""
    python = path.endswith(".py")
    scan = _JS_TOKEN if path.endswith(_JS_SUFFIXES) else _C_TOKEN
    found: list[tuple[int, Mutation]] = []
    lines = source.splitlines()
    for row in sorted(added):
        if not 0 < row <= len(lines):
            continue
        line = lines[row - 1]
        m = (_PY_ASSIGN if python else _C_ASSIGN).match(line)
        if m and (python or path.endswith(".go") or line.rstrip().endswith(";")):
            stmt = m.group("stmt")
            if python or not stmt.rstrip().endswith(("{", "(", ",", "[")):
                new = "pass" if python else ""
                found.append((REMOVAL_RANK, Mutation(path, row, m.start("stmt"), stmt, new)))
        if python or _NO_STRINGS.search(line):
            continue
        # the language's own scan: a string is one token, a comment another
        strings = (t for t in scan.finditer(line) if t.group(0)[:1] == '"' != t.group(0)[1:2])
        text = next((t for t in strings if _emptiable(t.group(0))), None)
        if text is not None:  # one per line
            found.append((REMOVAL_RANK, Mutation(path, row, text.start(), text.group(0), '""')))
    return found


def _python_strings(
    path: str, tokens: list[tokenize.TokenInfo], lines: list[str], added: set[int]
) -> list[tuple[int, Mutation]]:
    """A Python string literal emptied, one per added line: not a docstring (a string
    alone as a statement), an f-string or a triple-quoted one."""
    found: list[tuple[int, Mutation]] = []
    rows: set[int] = set()
    skip = (tokenize.NL, tokenize.COMMENT)
    meaningful = [t for t in tokens if t.type not in skip]
    for k, tok in enumerate(meaningful):
        row = tok.start[0]
        if tok.type != tokenize.STRING or row not in added or row in rows:
            continue
        before = meaningful[k - 1].type if k else tokenize.NEWLINE
        after = meaningful[k + 1].type if k + 1 < len(meaningful) else tokenize.NEWLINE
        alone = before in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
        if alone and after == tokenize.NEWLINE:
            continue  # a docstring
        if _NO_STRINGS.search(lines[row - 1]) or not _PY_STRING.match(tok.string):
            continue
        if not _emptiable(tok.string):
            continue
        quote = tok.string[-1]
        prefix = tok.string[: tok.string.index(quote)]
        rows.add(row)
        found.append(
            (REMOVAL_RANK, Mutation(path, row, tok.start[1], tok.string, prefix + quote * 2))
        )
    return found


def _emptiable(literal: str) -> bool:
    """Not a format string: emptied, its arguments would not build (Rust's ``println!``)."""
    return "{" not in literal and "%" not in literal


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


_HANDLER = re.compile(
    r"[ \t]+(?P<types>[^\s#:()][^#:]*?|\([^#:]*\))[ \t]*(?:[ \t]as[ \t]+\w+[ \t]*)?:"
)


def _handler_mutation(path: str, tok: tokenize.TokenInfo, line: str) -> Mutation | None:
    """``except E:`` (or ``except (E, F) as e:``) made to catch nothing (``except ():``):
    the fallback a change adds for an error is only checked by a test the error reaches.
    One line's handler only; a bare ``except:`` and ``except*`` are left alone."""
    m = _HANDLER.match(line, tok.end[1])
    if m is None or line[tok.end[1] : tok.end[1] + 1] == "*":
        return None
    types = m.group("types").rstrip()
    if types.endswith(" as") or types == "()":
        return None
    return Mutation(path, tok.start[0], m.start("types"), types, "()")


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
