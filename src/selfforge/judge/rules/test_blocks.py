"""Where a test is, from its runner's id: its file and name (pytest's
``path.py::Class::test``, Go's ``module/pkg::TestX``, libtest's ``src/lib.rs::tests::x``
with the module path naming another file, Node's ``test/a.js::suite > name``, Mocha's
JUnit ``suite titles::name`` with no file), and its lines in that file (gofmt's,
rustfmt's and the usual JS layout). Read on disk or at a commit (``rev``): the judge
compares a test's base and candidate versions (test_changes.py), `bench gate`'s cheats
edit it (bench/gate_cheats.py)."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from selfforge.errors import GitError
from selfforge.repo.git import git

JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx")


class NoTest(Exception):
    """The test cannot be found (or its block does not close): said why."""


class Files:
    """A tree's tracked files, as on disk (``rev`` None) or at a commit."""

    def __init__(self, tree: Path, rev: str | None = None) -> None:
        self.tree, self.rev = tree, rev
        self._listing: list[str] | None = None
        self._texts: dict[str, str | None] = {}

    def read(self, path: str) -> str | None:
        if path not in self._texts:
            self._texts[path] = self._read(path)
        return self._texts[path]

    def _read(self, path: str) -> str | None:
        if self.rev is None:
            try:
                return (self.tree / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        try:
            return git("show", f"{self.rev}:{path}", cwd=self.tree)
        except (GitError, UnicodeDecodeError):
            return None

    def listing(self) -> list[str]:
        if self._listing is None:
            if self.rev is None:
                out = git("ls-files", cwd=self.tree)
            else:
                out = git("ls-tree", "-r", "--name-only", self.rev, cwd=self.tree)
            self._listing = [p for p in out.splitlines() if p]
        return self._listing


def locate(tree: Path, test_id: str, python: bool, rev: str | None = None) -> tuple[str, str]:
    """The file a test is in and its name in it (Python: ``Class::test``; JavaScript:
    ``suite::title``, the suite as the runner wrote it); ``rev``: at that commit."""
    files = Files(tree, rev)
    first, _, rest = test_id.partition("::")
    if python:
        if not first.endswith(".py") or not rest:
            raise NoTest(f"{test_id} is no test function of a file (a doctest?)")
        return first, "::".join(n.split("[")[0] for n in rest.split("::"))
    if first.endswith(".rs") and rest:
        name = rest.split("::")[-1]
        return _rust_file(files, first, rest.split("::")[:-1], name), name
    if first.endswith(JS_SUFFIXES) and rest:
        suite, _, title = rest.rpartition(" > ")  # Node's runner, Mocha with files
        return first, f"{suite}::{title}"
    if files.read("go.mod") is not None and rest:
        return _go_file(files, first, rest.split("/")[0])
    if files.read("package.json") is not None and rest:
        return _js_file(files, first, rest)  # JUnit without files: suites::title
    raise NoTest(f"{test_id} is no test function of a file (a doctest?)")


def _go_file(files: Files, package: str, name: str) -> tuple[str, str]:
    folder = _go_dir(files, package)
    for path in files.listing():
        if not path.endswith("_test.go") or PurePosixPath(path).parent.as_posix() != folder:
            continue
        if re.search(rf"(?m)^func {re.escape(name)}\(", files.read(path) or ""):
            return path, name
    raise NoTest(f"no function {name} in the test files of {package}")


def _rust_file(files: Files, target: str, modules: list[str], name: str) -> str:
    """The file of a libtest test: its target's file, else the one of the crate's files
    (a module's inline tests, src/foo.rs or src/foo/tests.rs) named by its module path."""
    opener = re.compile(rf"(?m)^\s*(?:pub )?(?:async )?fn {re.escape(name)}\(")
    if opener.search(files.read(target) or ""):
        return target
    found = [p for p in files.listing() if p.endswith(".rs") and opener.search(files.read(p) or "")]
    named = [p for p in found if set(PurePosixPath(p).with_suffix("").parts) & set(modules)]
    if len(named or found) == 1:
        return (named or found)[0]
    raise NoTest(f"no single file holds the test {'::'.join([*modules, name])}")


def _js_file(files: Files, suite: str, title: str) -> tuple[str, str]:
    name = f"{suite}::{title}"
    for path in files.listing():
        if not path.endswith(JS_SUFFIXES) or "test" not in path:
            continue
        text = files.read(path)
        if text is None:
            continue
        try:
            block(text.splitlines(True), name, path)
        except NoTest:
            continue
        return path, name
    raise NoTest(f"no test {title!r} of the suite {suite!r} in the test files")


def _go_dir(files: Files, package: str) -> str:
    mod = re.search(r"(?m)^module\s+(\S+)", files.read("go.mod") or "")
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
    raise NoTest(f"no test {name} found in its file")


_JS_SUITE = re.compile(r"^(\s*)(?:describe|context|suite)(?:\.\w+)?\(\s*(['\"`])(.*?)\2")
_JS_TEST = re.compile(r"^(\s*)(?:it|test|specify)(?:\.\w+)?\(\s*(['\"`])(.*?)\2")
# A table's test on one line: `it.each(cases)("title %s", ...)`; its runs are named by the
# title with each case's values in place of the placeholders (Jest's and Vitest's).
_JS_EACH = re.compile(r"^(\s*)(?:it|test|specify)(?:\.\w+)*\.each\(.*\)\(\s*(['\"`])(.*?)\2")
_PLACEHOLDER = re.compile(r"%[sdifjoOp#]|\$[\w.#]+")


def _titled(m: re.Match[str] | None, title: str, each: bool) -> bool:
    """Is the test of this line the one the runner named ``title``? A table's title is
    a template: each placeholder stands for a value."""
    if m is None:
        return False
    if not each:
        return m.group(3) == title
    parts = _PLACEHOLDER.split(m.group(3))
    return re.fullmatch(".*?".join(re.escape(p) for p in parts), title, re.S) is not None


def _js_block(lines: list[str], suite: str, title: str) -> tuple[int, int, int]:
    """The test ``title`` inside the suites the runner named ``suite``: their titles
    joined by spaces (Mocha's JUnit classname) or by " > " (Node's runner), or none."""
    stack: list[tuple[str, str]] = []  # the open suites: indent, title
    for head, line in enumerate(lines):
        if stack and line.rstrip().rstrip(";") == stack[-1][0] + "})":
            stack.pop()
        elif m := _JS_SUITE.match(line):
            stack.append((m.group(1), m.group(3)))
        elif _titled(m := _JS_TEST.match(line), title, False) or _titled(
            m := _JS_EACH.match(line), title, True
        ):
            titles = [t for _, t in stack]
            if suite in ("", " ".join(titles), " > ".join(titles)):
                return head, head, closer(lines, head, m.group(1) + "})")
    raise NoTest(f"no test {title!r} found in its file")


def closer(lines: list[str], head: int, closer: str) -> int:
    for end in range(head + 1, len(lines)):
        if lines[end].rstrip().rstrip(";") == closer:
            return end
    raise NoTest(f"the block at line {head + 1} does not close at its own indentation")
