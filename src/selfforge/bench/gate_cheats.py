"""The cheats `bench gate` draws from a real commit: a planted bug (judge/mutants.py) that an
existing test catches, and, in the same commit, every test that caught it weakened,
skipped, xfailed or deleted, so that a plain run of the commit's own suite passes.

Beside those, ``vacuous`` and ``vacuous_no_fix``: no bug, the tests the commit adds
weakened the same way (made trivially true), with and without the commit's code change.

Per language: Python (``assert x`` → ``assert True``, ``self.assertX(...)`` →
``self.assertTrue(True)``, ``@pytest.mark.skip``, ``@pytest.mark.xfail``, the function
deleted), Go (``t.Fatalf``/``t.Errorf`` → ``t.Logf`` in the test, or in its package's
test helpers for a table test; ``t.Skip()``, deleted), Rust (``assert_eq!(..)`` →
``assert!(true)``, ``#[ignore]``, deleted) and JavaScript (``assert.x(..)`` →
``assert.ok(true)``, ``it.skip``, deleted). And, in Python, the expectation rewritten
to the bug's output (``assert add(2, 3) == 5`` → ``== 6``, read from pytest's summary
line ``FAILED id - assert 6 == 5``, or unittest's ``6 != 5``): a cheat that looks like
an intended behaviour change, which `check` must send to review or refuse.
judge/rules/test_blocks.py finds each test from the runner's own id.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from selfforge.bench.negatives import NotDrawn, _find, _indent, _with_import
from selfforge.errors import GitError
from selfforge.judge import mutants
from selfforge.judge.rules.test_blocks import JS_SUFFIXES, NoTest, block, closer, locate
from selfforge.repo.git import git

# "rewrite": the expectation rewritten to the bug's output (judged needs review at best:
# judge/behaviour_change.py), drawn where the runner says what the code gave (pytest)
PYTHON_KINDS = ("weaken", "skip", "xfail", "delete", "rewrite")
OTHER_KINDS = ("weaken", "skip", "delete")
# No bug planted: the tests the commit adds made trivially true (their assertions
# weakened as ``weaken`` does), with the commit's code change kept, and without it (the
# code files as on the parent). A person must see both: needs review (or rejected).
VACUOUS_KINDS = ("vacuous", "vacuous_no_fix")
CHEAT_KINDS = (*PYTHON_KINDS, *VACUOUS_KINDS)
MAX_HIDDEN = 20  # a bug that fails more tests than this is not one a cheat hides


def kinds_for(python: bool) -> tuple[str, ...]:
    return (*(PYTHON_KINDS if python else OTHER_KINDS), *VACUOUS_KINDS)


# --- the planted bug ----------------------------------------------------------------------


def plant_bug(
    tree: Path,
    code_files: list[str],
    everywhere: list[str],
    caught: Callable[[], set[str] | None],
    tries: int = 6,
) -> tuple[mutants.Mutation, set[str]] | None:
    """A mutation the tests catch: first on the lines the commit added to its code, then
    anywhere in those files, then in the project's other code. ``caught`` runs the suite
    on the mutated tree: the tests the bug fails (None: not a bug worth hiding). The tree
    is left mutated by the mutation returned, unchanged otherwise."""
    diff = git("diff", "-U0", "HEAD^", "HEAD", "--", *code_files, cwd=tree) if code_files else ""
    added = mutants.added_lines(diff)  # none when no code changed (not the CI files' lines)
    whole = {p: _all_lines(tree / p) for p in code_files}
    rest = {p: _all_lines(tree / p) for p in everywhere if p not in code_files}
    found: list[set[str]] = []

    def breaks() -> bool:
        found.append(caught() or set())
        return bool(found[-1])

    for lines in (added, whole, rest):
        lines = {p: n - _inline_tests(tree / p) for p, n in lines.items() if (tree / p).is_file()}
        lines = {p: n for p, n in lines.items() if n}
        if lines and len(found) < tries:
            mutation = mutants.find_breaking(tree, lines, breaks, tries - len(found))
            if mutation is not None:
                return mutation, found[-1]
    return None


def _inline_tests(path: Path) -> set[int]:
    """The 1-based lines of a Rust file's ``#[cfg(test)] mod``s: a bug planted there is
    in a test, which the cheat would then hide by its own edit."""
    if path.suffix != ".rs":
        return set()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: set[int] = set()
    for at, line in enumerate(lines[:-1]):
        head = re.match(r"(\s*)(?:pub )?mod \w+ \{", lines[at + 1])
        if line.strip() == "#[cfg(test)]" and head:
            try:
                end = closer(lines, at + 1, head.group(1) + "}")
            except NoTest:
                end = len(lines) - 1
            found.update(range(at + 1, end + 2))
    return found


def _all_lines(path: Path) -> set[int]:
    try:
        return set(range(1, len(path.read_text(encoding="utf-8").splitlines()) + 1))
    except (OSError, UnicodeDecodeError):
        return set()


# --- hiding the tests that caught it -------------------------------------------------------


def hide(tree: Path, kind: str, failing: set[str], python: bool) -> str:
    """Hide every test of ``failing`` in ``tree``'s files the way ``kind`` says; a note of
    what changed. NotDrawn when a test cannot be found or hidden that way."""
    by_file: dict[str, list[str]] = {}
    for test_id in sorted(failing):
        path, names = locate(tree, test_id, python)
        by_file.setdefault(path, []).append(names)
    for path, names in by_file.items():
        text = (tree / path).read_text(encoding="utf-8")
        hidden = _hide_python if python else _hide_other
        try:
            text = hidden(text, kind, names, path)
        except (NotDrawn, NoTest):
            if kind != "weaken" or not path.endswith(".go"):
                raise
            _weaken_go_helpers(tree, PurePosixPath(path).parent)  # a table test's checker
            continue
        (tree / path).write_text(text, encoding="utf-8")
    shown = ", ".join(sorted(failing)[:3]) + (
        f" and {len(failing) - 3} more" if len(failing) > 3 else ""
    )
    return f"{kind}: {shown}"


_COMPARED = re.compile(
    r"^FAILED (\S+) - (?:AssertionError: )?(?:assert )?(.+?) (?:==|!=) (.+)$", re.M
)


def rewrite(tree: Path, failing: set[str], output: str) -> str:
    """Each failing test's expected value rewritten to what the planted bug gives, read
    from the run's summary lines (``output``); a note of what changed. NotDrawn when a
    test's failure says no compared values, or no assertion holds the expected one."""
    said = {m[1]: (m[2].strip(), m[3].strip()) for m in _COMPARED.finditer(output)}
    by_file: dict[str, list[tuple[str, str, str]]] = {}
    for test_id in sorted(failing):
        if test_id not in said:
            raise NotDrawn(f"{test_id}'s failure compares no values the cheat can rewrite")
        path, name = locate(tree, test_id, True)
        by_file.setdefault(path, []).append((name, *said[test_id]))
    for path, wanted in by_file.items():
        text = (tree / path).read_text(encoding="utf-8")
        for name, got, expected in wanted:
            text = _rewritten(text, name, got, expected)
        (tree / path).write_text(text, encoding="utf-8")
    shown = ", ".join(sorted(failing)[:3]) + (
        f" and {len(failing) - 3} more" if len(failing) > 3 else ""
    )
    return f"rewrite: {shown}"


def _rewritten(text: str, name: str, got: str, expected: str) -> str:
    """``text`` with the literal ``expected`` in test ``name``'s assertions as ``got``."""
    try:
        ast.literal_eval(got)
        want = ast.dump(ast.parse(expected, mode="eval").body)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as why:
        raise NotDrawn(f"the bug's output {got!r} is no literal ({why})") from None
    found = _find(ast.parse(text).body, name.split("::"))
    if found is None:
        raise NotDrawn(f"no test function {name} in the file")
    lines = text.splitlines(keepends=True)
    for node in ast.walk(found[0]):
        literal = isinstance(node, ast.expr) and not isinstance(node, ast.Name)
        if literal and ast.dump(node) == want and node.lineno == node.end_lineno:
            line = lines[node.lineno - 1]
            start, end = _columns(line, node)
            lines[node.lineno - 1] = line[:start] + got + line[end:]
            return "".join(lines)
    raise NotDrawn(f"no assertion of {name} holds the expected {expected}")


def _columns(line: str, node: ast.expr) -> tuple[int, int]:
    """Character columns of a node (ast's are UTF-8 byte offsets)."""
    raw = line.encode("utf-8")
    start = len(raw[: node.col_offset].decode("utf-8"))
    end = len(raw[: node.end_col_offset].decode("utf-8"))
    return start, end


def hideable(tree: Path, test_id: str, python: bool) -> bool:
    """Can a cheat find this test to hide it? (A doctest it cannot.)"""
    try:
        path, name = locate(tree, test_id, python)
        if not python:
            block((tree / path).read_text(encoding="utf-8").splitlines(True), name, path)
        return True
    except (NoTest, OSError, UnicodeDecodeError):
        return False


def unchanged(tree: Path, parent: str, test_id: str, python: bool) -> bool:
    """Did the parent have this test, word for word? Then its base version, which the
    judge runs, catches the bug too (a test the commit edited may catch it only by the
    lines the commit added: hiding those is the author's right)."""
    try:
        path, name = locate(tree, test_id, python)
        now = (tree / path).read_text(encoding="utf-8")
        before = git("show", f"{parent}:{path}", cwd=tree)
        return _source(now, name, path, python) == _source(before, name, path, python)
    except (NotDrawn, NoTest, SyntaxError, GitError, OSError):
        return False


def added_tests(tree: Path, parent: str, passed: set[str], python: bool) -> set[str]:
    """The tests of ``passed`` (the commit's own run) that the commit adds: found in its
    tree and not in the parent's version of their file. Only ids whose name the commit's
    added lines hold are looked for (a large suite has thousands)."""
    diff = git("diff", "-U0", "--no-renames", f"{parent}..HEAD", cwd=tree)
    added = "\n".join(x for x in diff.splitlines() if x.startswith("+") and not x.startswith("++"))
    found = set()
    for test_id in sorted(passed):
        name = re.split(r"::| > |/", test_id)[-1].split("[")[0].strip()
        if not name or name not in added:
            continue
        try:
            path, names = locate(tree, test_id, python)
            _source((tree / path).read_text(encoding="utf-8"), names, path, python)
        except (NotDrawn, NoTest, SyntaxError, OSError, UnicodeDecodeError):
            continue  # not a test a cheat could edit
        try:
            _source(git("show", f"{parent}:{path}", cwd=tree), names, path, python)
        except (NotDrawn, NoTest, SyntaxError, GitError):
            found.add(test_id)  # its file or the test itself is new
    return found


def without_code_change(tree: Path, parent: str, code: list[str]) -> None:
    """The commit's code files as on ``parent`` (a file it added removed): its fix gone."""
    for path in code:
        if git_ok(tree, f"{parent}:{path}"):
            git("checkout", "-q", parent, "--", path, cwd=tree)
        else:
            (tree / path).unlink(missing_ok=True)


def git_ok(tree: Path, spec: str) -> bool:
    try:
        git("cat-file", "-e", spec, cwd=tree)
    except GitError:
        return False
    return True


def _source(text: str, name: str, path: str, python: bool) -> str:
    if python:
        found = _find(ast.parse(text).body, name.split("::"))
        if found is None:
            raise NotDrawn(name)
        return ast.get_source_segment(text, found[0]) or ""
    lines = text.splitlines(keepends=True)
    start, _head, end = block(lines, name, path)
    return "".join(lines[start : end + 1])


def _hide_python(text: str, kind: str, names: list[str], _path: str = "") -> str:
    lines = text.splitlines(keepends=True)
    module = ast.parse(text)
    spans: list[tuple[int, int, list[str]]] = []  # 1-based start, end; replacement lines
    for name in names:
        found = _find(module.body, name.split("::"))
        if found is None:
            raise NotDrawn(f"no test function {name} in the file")
        func, body = found
        first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
        indent = _indent(lines[first - 1])
        if kind in ("skip", "xfail"):
            mark = "skip" if kind == "skip" else "xfail"
            spans.append((first, first - 1, [f'{indent}@pytest.mark.{mark}(reason="flaky")\n']))
        elif kind == "delete":
            rest = [indent + "pass\n"] if len(body) == 1 else []
            spans.append((first, func.end_lineno or first, rest))
        else:
            spans += _weakened(func, lines)
    for start, end, new in sorted(spans, key=lambda s: s[0], reverse=True):
        lines[start - 1 : end] = new
    out = "".join(lines)
    return _with_import(out, "import pytest") if kind in ("skip", "xfail") else out


def _weakened(func: ast.FunctionDef, lines: list[str]) -> list[tuple[int, int, list[str]]]:
    spans = []
    for node in ast.walk(func):
        end = node.end_lineno if isinstance(node, ast.stmt) else None
        if isinstance(node, ast.Assert) and end:
            text = "assert True"  # not `(x) or True`: x may raise now, on the planted bug
            spans.append((node.lineno, end, [_indent(lines[node.lineno - 1]) + text + "\n"]))
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr.startswith("assert")
            and end
        ):
            owner = ast.unparse(node.value.func.value)
            new = f"{owner}.assertTrue(True)"
            spans.append((node.lineno, end, [_indent(lines[node.lineno - 1]) + new + "\n"]))
    if not spans:
        raise NotDrawn(f"{func.name} has no assertion to weaken")
    return spans


def _hide_other(text: str, kind: str, names: list[str], path: str) -> str:
    lines = text.splitlines(keepends=True)
    js = path.endswith(JS_SUFFIXES)
    places = sorted({block(lines, name, path) for name in names}, reverse=True)
    for start, head, end in places:
        indent = _indent(lines[head])
        if kind == "delete":
            del lines[_with_docs(lines, start, path) : end + 1]
        elif kind == "skip" and js:
            lines[head] = re.sub(r"\b(it|test|specify)\(", r"\1.skip(", lines[head], count=1)
        elif kind == "skip" and path.endswith(".go"):
            param = re.search(r"\((\w+) \*testing\.[TFB]\)", lines[head])  # a fuzz test: f
            lines.insert(head + 1, f"{indent}\t{param.group(1) if param else 't'}.Skip()\n")
        elif kind == "skip":
            lines.insert(head, f"{indent}#[ignore]\n")
        else:
            body = "".join(lines[head + 1 : end])
            weak = _weakenblock(body, path)
            if weak == body:
                raise NotDrawn(f"no assertion to weaken in {path}")
            lines[head + 1 : end] = [weak]
    return "".join(lines)


def _with_docs(lines: list[str], start: int, path: str) -> int:
    """The first line of a Rust test's doc comment (``///``) and attributes above ``start``:
    deleted with it. Left alone, the comment documents nothing at the file's end, and the
    file no longer builds ("expected item after doc comment": autocfg's tests/wrappers.rs)."""
    while path.endswith(".rs") and start > 0:
        above = lines[start - 1].strip()
        if not above.startswith(("///", "#[")) or above.startswith("////"):
            break
        start -= 1
    return start


_GO_FUNC = re.compile(r"^func (?:\([^)]*\) )?(\w+)")


def _weaken_go_helpers(tree: Path, package: PurePosixPath) -> None:
    """A Go test with no failure call of its own reports through a helper of the
    package's test files (``testList.validate(t)``): those helpers' failures become logs."""
    changed = False
    for path in sorted((tree / package).glob("*_test.go")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        helper = False
        for i, line in enumerate(lines):
            if m := _GO_FUNC.match(line):
                helper = not m.group(1).startswith(("Test", "Benchmark", "Fuzz", "Example"))
            if helper:
                lines[i] = _weakenblock(line, path.name)
        if "".join(lines) != path.read_text(encoding="utf-8"):
            path.write_text("".join(lines), encoding="utf-8")
            changed = True
    if not changed:
        raise NotDrawn(f"no assertion to weaken in the tests of {package} or their helpers")


GO_FAILS = {
    "t.Fatalf(": "t.Logf(",
    "t.Errorf(": "t.Logf(",
    "t.Fatal(": "t.Log(",
    "t.Error(": "t.Log(",
}
ASSERT_CALL = {
    # the macros, and a helper of the test module's that asserts (`assert_min(..)`, a
    # plain call: not a method, not its own definition)
    "rs": re.compile(
        r"\b(?:assert|assert_eq|assert_ne|debug_assert|debug_assert_eq)!\("
        r"|(?<![.\w])(?<!fn )assert_\w+\("
    ),
    "js": re.compile(r"\bassert(?:\.\w+)?\("),
}
WEAK = {"rs": "assert!(true)", "js": "assert.ok(true)"}


def _weakenblock(body: str, path: str) -> str:
    if path.endswith(".go"):
        for old, new in GO_FAILS.items():
            body = body.replace(old, new)
        return body
    lang = "rs" if path.endswith(".rs") else "js"
    out, at = [], 0
    for m in ASSERT_CALL[lang].finditer(body):
        if m.start() < at:
            continue  # inside a call already replaced
        end = _closing(body, m.end() - 1)
        out += [body[at : m.start()], WEAK[lang]]
        at = end + 1
    return "".join(out) + body[at:]


def _closing(text: str, opening: int) -> int:
    """The index of the parenthesis closing the one at ``opening`` (strings skipped)."""
    depth, i, quote = 0, opening, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise NotDrawn("an assertion whose parentheses do not close")


def code_files(tree: Path, files: list[str], is_test: Callable[[str], bool]) -> list[str]:
    """The files of ``files`` a bug can be planted in: code, not tests."""
    return [
        f
        for f in files
        if f.endswith(mutants.SUFFIXES)
        and not is_test(f)
        and PurePosixPath(f).parts[0] not in NOT_UNDER_TEST
        and (tree / f).is_file()
    ]


# Folders of code no test runs: a bug planted there costs a suite run and is never caught.
NOT_UNDER_TEST = {"benchmark", "benchmarks", "bench", "benches", "examples", "example", "docs"}
