"""Where `bench gate`'s cheats find a test the planted bug fails: its file and name from
the runner's id (pytest's ``path.py::Class::test``, Go's ``module/pkg::TestX``, libtest's
``src/lib.rs::tests::x`` with the module path naming another file, Node's
``test/a.js::suite > name``, Mocha's JUnit ``suite titles::name`` with no file), and
its lines in that file (gofmt's, rustfmt's and the usual JS layout)."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from selfforge.bench.negatives import NotDrawn
from selfforge.repo.git import git

JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")


def locate(tree: Path, test_id: str, python: bool) -> tuple[str, str]:
    """The file a test is in and its name in it (Python: ``Class::test``; JavaScript:
    ``suite::title``, the suite as the runner wrote it)."""
    first, _, rest = test_id.partition("::")
    if python:
        if not first.endswith(".py") or not rest:
            raise NotDrawn(f"{test_id} is no test function of a file (a doctest?)")
        return first, "::".join(n.split("[")[0] for n in rest.split("::"))
    if first.endswith(".rs") and rest:
        name = rest.split("::")[-1]
        return _rust_file(tree, first, rest.split("::")[:-1], name), name
    if first.endswith(JS_SUFFIXES) and rest:
        suite, _, title = rest.rpartition(" > ")  # Node's runner, Mocha with files
        return first, f"{suite}::{title}"
    if (tree / "go.mod").is_file() and rest:
        return _go_file(tree, first, rest.split("/")[0])
    if (tree / "package.json").is_file() and rest:
        return _js_file(tree, first, rest)  # JUnit without files: suites::title
    raise NotDrawn(f"{test_id} is no test function of a file (a doctest?)")


def hideable(tree: Path, test_id: str, python: bool) -> bool:
    """Can a cheat find this test to hide it? (A doctest it cannot.)"""
    try:
        path, name = locate(tree, test_id, python)
        if not python:
            block((tree / path).read_text(encoding="utf-8").splitlines(True), name, path)
        return True
    except (NotDrawn, OSError, UnicodeDecodeError):
        return False


def _go_file(tree: Path, package: str, name: str) -> tuple[str, str]:
    for path in sorted((tree / _go_dir(tree, package)).glob("*_test.go")):
        if re.search(rf"(?m)^func {re.escape(name)}\(", path.read_text(encoding="utf-8")):
            return path.relative_to(tree).as_posix(), name
    raise NotDrawn(f"no function {name} in the test files of {package}")


def _rust_file(tree: Path, target: str, modules: list[str], name: str) -> str:
    """The file of a libtest test: its target's file, else the one of the crate's files
    (a module's inline tests, src/foo.rs or src/foo/tests.rs) named by its module path."""
    opener = re.compile(rf"(?m)^\s*(?:pub )?(?:async )?fn {re.escape(name)}\(")
    if (tree / target).is_file() and opener.search((tree / target).read_text("utf-8")):
        return target
    found = [
        p
        for p in git("ls-files", "*.rs", cwd=tree).splitlines()
        if (tree / p).is_file() and opener.search((tree / p).read_text(encoding="utf-8"))
    ]
    named = [p for p in found if set(PurePosixPath(p).with_suffix("").parts) & set(modules)]
    if len(named or found) == 1:
        return (named or found)[0]
    raise NotDrawn(f"no single file holds the test {'::'.join([*modules, name])}")


def _js_file(tree: Path, suite: str, title: str) -> tuple[str, str]:
    name = f"{suite}::{title}"
    for path in git("ls-files", cwd=tree).splitlines():
        if not path.endswith(JS_SUFFIXES) or "test" not in path or not (tree / path).is_file():
            continue
        try:
            block((tree / path).read_text(encoding="utf-8").splitlines(True), name, path)
        except (NotDrawn, UnicodeDecodeError):
            continue
        return path, name
    raise NotDrawn(f"no test {title!r} of the suite {suite!r} in the test files")


def _go_dir(tree: Path, package: str) -> str:
    mod = re.search(r"(?m)^module\s+(\S+)", (tree / "go.mod").read_text(encoding="utf-8"))
    module = mod.group(1) if mod else ""
    return package.removeprefix(module).lstrip("/") or "."


def block(lines: list[str], name: str, path: str) -> tuple[int, int, int]:
    """0-based lines of a test's first attribute, its opening line and its closing brace
    (gofmt's, rustfmt's and the usual JS layout)."""
    if path.endswith(JS_SUFFIXES):
        return _js_block(lines, *name.rsplit("::", 1))
    opener = re.compile(rf"^(\s*)(?:pub )?(?:async )?(?:func|fn) {re.escape(name)}\(")
    for head, line in enumerate(lines):
        if m := opener.match(line):
            start = head
            while start > 0 and lines[start - 1].strip().startswith("#["):
                start -= 1
            return start, head, closer(lines, head, m.group(1) + "}")
    raise NotDrawn(f"no test {name} found in its file")


_JS_SUITE = re.compile(r"^(\s*)(?:describe|context|suite)\(\s*(['\"`])(.*?)\2")
_JS_TEST = re.compile(r"^(\s*)(?:it|test|specify)\(\s*(['\"`])(.*?)\2")


def _js_block(lines: list[str], suite: str, title: str) -> tuple[int, int, int]:
    """The test ``title`` inside the suites the runner named ``suite``: their titles
    joined by spaces (Mocha's JUnit classname) or by " > " (Node's runner), or none."""
    stack: list[tuple[str, str]] = []  # the open suites: indent, title
    for head, line in enumerate(lines):
        if stack and line.rstrip().rstrip(";") == stack[-1][0] + "})":
            stack.pop()
        elif m := _JS_SUITE.match(line):
            stack.append((m.group(1), m.group(3)))
        elif (m := _JS_TEST.match(line)) and m.group(3) == title:
            titles = [t for _, t in stack]
            if suite in ("", " ".join(titles), " > ".join(titles)):
                return head, head, closer(lines, head, m.group(1) + "})")
    raise NotDrawn(f"no test {title!r} found in its file")


def closer(lines: list[str], head: int, closer: str) -> int:
    for end in range(head + 1, len(lines)):
        if lines[end].rstrip().rstrip(";") == closer:
            return end
    raise NotDrawn(f"the block at line {head + 1} does not close at its own indentation")
