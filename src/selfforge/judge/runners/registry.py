"""The test runners selfforge reads, one line each: the only place a runner is listed.

Everything the rest of selfforge asks about runners is asked here, and answered by
folding each adapter's own facts (``base.Adapter``): the names ``[checks] runner``
accepts, which adapter runs a test command (``detect``: once per check, the result
carried), which files are tests, the runners' configuration files, the marks that skip
or focus a test, what a missing module or a toolchain that does not start looks like,
and what ``init`` and ``doctor`` find. Adding a runner is one file beside this one and
one line in ``ADAPTERS``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.errors import ConfigError
from selfforge.judge.runners import bun, cargo, gotest, junit, node, python, tap
from selfforge.judge.runners.base import (
    Adapter,
    Found,
    Module,
    package_scripts,
    skipped_folder,
    words,
)
from selfforge.repo.treefiles import NotReadable, read_bytes

if TYPE_CHECKING:
    from selfforge.config import LoadedDirectives
    from selfforge.judge.runners.results import TestReport
    from selfforge.judge.sandbox.check_space import CheckSpace
    from selfforge.repo.testpaths import TestRule

# In the order commands and projects are recognised: the first that claims one wins;
# Python's runners last (pytest is what a command no other runner claims falls back to).
ADAPTERS: tuple[type[Adapter], ...] = (
    gotest.GoTest,
    cargo.CargoTest,
    node.NodeTest,
    bun.BunTest,
    junit.JUnit,
    tap.Tap,
    python.PyTest,
    python.Unittest,
)
AUTO = "auto"  # [checks] runner's default: told from the command and the project


def names() -> tuple[str, ...]:
    """What ``[checks] runner`` accepts."""
    return (AUTO, *(a.name for a in ADAPTERS))


def by_name(name: str) -> type[Adapter]:
    """The adapter named ``name``; a ConfigError naming the runners there are."""
    for adapter in ADAPTERS:
        if adapter.name == name:
            return adapter
    raise ConfigError(
        f"[checks] runner = {name!r} is no runner selfforge reads; runners are "
        + ", ".join(names())
    )


def own_toolchain(name: str) -> bool:
    """A runner of a language of its own (no Python virtualenv needed); False for any
    other name (``tox``, ``make``: Python's commands as init finds them)."""
    return any(a.name == name and not a.reports_through_channel for a in ADAPTERS)


def check_name(name: str) -> str:
    """``name`` when ``[checks] runner`` may say it (``auto`` or a runner's), else the
    ConfigError of ``by_name``."""
    if name != AUTO:
        by_name(name)
    return name


def check_directives(loaded: LoadedDirectives) -> None:
    """``[checks] runner`` names a runner of this registry, else a ConfigError that names
    the file and line, and the runners there are (``config.py`` sits below the judge and
    cannot ask: the commands that load directives ask here, right after)."""
    from selfforge.config import line_of

    try:
        check_name(loaded.directives.checks.runner)
    except ConfigError as exc:
        if loaded.path is None:
            raise
        line = line_of(loaded.text, ("checks", "runner"), loaded.path)
        where = f"{loaded.path}:{line}" if line else str(loaded.path)
        raise ConfigError(f"{where}: {exc.message}") from None


def detect(command: str, tree: Path, explicit: str = AUTO, junit_path: str = "") -> Adapter:
    """The adapter for a test command: the one ``[checks] runner`` names, else the first
    whose command the test command (or a Makefile, justfile or script it runs, or the
    package.json script ``npm test`` runs) is; else pytest, whose plugin reports through
    any wrapper (and unittest's output is read where no plugin spoke)."""
    if explicit != AUTO:
        return by_name(explicit).make(command, junit_path)
    texts = [f" {command} ", *_wrapped(command, tree)]
    if (script := _npm_script(command, tree)) is not None:
        texts.append(f" {script} ")
    for text in texts:
        for adapter in ADAPTERS:
            if adapter.runs(text):
                return adapter.make(command, junit_path)
    return python.PyTest.make(command, junit_path)


def for_space(space: CheckSpace, command: str, tree: Path) -> Adapter:
    """The runner the check space carries (detected once for the run or check), else
    the one ``command`` runs on ``tree`` (a space made without a test command)."""
    if space.adapter is not None:
        return space.adapter
    return detect(command, tree, space.runner, space.junit)


def _wrapped(command: str, tree: Path) -> list[str]:
    """The text of the files a wrapping command runs (Makefile, justfile, a script);
    none for a command that runs Python (pytest's own channel reports through any
    wrapper)."""
    w = words(command)
    if not w or re.search(r"(^|[\s/])(pytest|py\.test|python[\d.]*)(\s|$)", command):
        return []
    names_ = [x for x in w if "/" in x or "." in x]
    if w[0] in ("make", "gmake"):
        names_ += ["Makefile", "makefile", "GNUmakefile"]
    elif w[0] == "just":
        names_ += ["justfile", "Justfile"]
    found = []
    for name in dict.fromkeys(n.removeprefix("./") for n in names_):
        try:
            found.append(read_bytes(tree, name, 256 * 1024).decode("utf-8", "replace"))
        except (NotReadable, ValueError, OSError):
            continue
    return found


def _npm_script(command: str, tree: Path) -> str | None:
    """The package.json script ``npm test`` / ``npm run X`` / ``yarn test`` runs."""
    w = words(command)
    if not w or w[0] not in ("npm", "yarn", "pnpm"):
        return None
    script = "test"
    if len(w) >= 3 and w[1] in ("run", "run-script"):
        script = w[2]
    elif len(w) >= 2 and w[1] not in ("test", "t"):
        return None
    return package_scripts(tree).get(script)


def init_found(root: Path) -> Found | None:
    """What ``init`` finds for a project that is not Python's: the first runner whose
    files the project has (go.mod, Cargo.toml, package.json's script or dependencies)."""
    for adapter in ADAPTERS:
        if (found := adapter.detect_init(root)) is not None:
            return found
    return None


def modules(
    adapter: Adapter,
    command: str,
    tree: Path,
    listed: str | list[str] = AUTO,
    report: TestReport | None = None,
    near: list[str] | None = None,
) -> list[Module]:
    """The nested modules of ``tree`` whose suites judge a change (``[checks] modules``:
    ``listed``, "auto": the runner's own, "none": none, else those folders), each with
    the command its suite runs with in its folder and whether ``command`` at the root
    runs it already: a workspace member (the project's files tell), or a module some test
    of ``report`` (the base's run) lies in (the deepest module holding it). ``near``:
    only the modules holding these paths (a change's: their folders are asked, the tree
    is not searched)."""
    if listed == "none":
        return []
    kind = type(adapter)
    if isinstance(listed, list):
        dirs = sorted({d.strip("/").removeprefix("./") for d in listed} - {"", "."})

        def home(path: str) -> str | None:
            return module_of(path, dirs)

        if near is not None:
            dirs = sorted({h for p in near if (h := home(p)) is not None})
    else:
        finder = _Finder(kind, tree)
        home = finder.deepest
        if near is None:
            dirs = kind.modules(tree)
        else:
            dirs = sorted({h for p in near if (h := home(p)) is not None})
    if not dirs:
        return []
    reached: set[str] = set()
    # a test's place is told by the first part of its id (its file, package, target):
    # one test asked per part
    one_each = {t.split("::", 1)[0]: t for t in (report.outcomes if report else ())}
    places = {adapter.owner(t, tree) or part for part, t in one_each.items()}
    for place in places:
        if (found := home(place)) is not None:
            reached.add(found)
    found_modules = []
    for folder in dirs:
        static = kind.covers_module(command, tree, folder)
        covered = ""
        if static:
            covered = "a member of the workspace the test command runs"
        elif static is None and folder in reached:
            covered = "the test command runs its tests"
        found_modules.append(Module(folder, kind.name, kind.module_command(command), covered))
    return found_modules


class _Finder:
    """The deepest module holding a path, by asking its folders (each asked once)."""

    def __init__(self, kind: type[Adapter], tree: Path) -> None:
        self.kind, self.tree = kind, tree
        self.known: dict[str, bool] = {}

    def deepest(self, path: str) -> str | None:
        parts = path.strip("/").split("/")
        for n in range(len(parts), 0, -1):
            folder = "/".join(parts[:n])
            if folder in (".", "") or skipped_folder(folder):
                continue
            if folder not in self.known:
                self.known[folder] = self.kind.is_module(self.tree, folder)
            if self.known[folder]:
                return folder
        return None


def init_modules(root: Path, test: str | None, runner: str, junit: str = "") -> list[Module]:
    """What ``init`` says of nested modules: those of the runner of the test command it
    chose, else every runner's (a project whose root has no suite)."""
    if test:
        return modules(detect(test, root, runner, junit), test, root)
    found: dict[str, Module] = {}
    for adapter in ADAPTERS:
        for folder in adapter.modules(root):
            found.setdefault(folder, Module(folder, adapter.name, adapter.module_command("")))
    return sorted(found.values(), key=lambda m: m.dir)


def module_of(path: str, dirs: list[str]) -> str | None:
    """The deepest of ``dirs`` (module folders) that holds ``path``; None: the root's."""
    holding = [d for d in dirs if path == d or path.startswith(d + "/")]
    return max(holding, key=len) if holding else None


def is_test_file(path: str, rule: TestRule | None = None) -> bool:
    """A file some runner runs as tests (``rule``: the project's pytest settings)."""
    return any(adapter.test_file(path, rule) for adapter in ADAPTERS)


def added_test_files(changed: dict[str, str], rule: TestRule, adapter: Adapter) -> list[str]:
    """The test files a change adds (``changed``: path -> git status) that the check's
    runner runs as tests: pytest's modules by the project's settings (``rule``); for any
    other runner, a test file of its language (``x_test.go``, a Rust integration test
    ``tests/it.rs``, ``x.test.ts``, code in a JS test folder), not a helper they use
    (``tests/common/mod.rs``) nor a Python module."""
    python = adapter.reports_through_channel and adapter.can_select()

    def runs(path: str) -> bool:
        if python:
            return rule.is_test_file(path)
        return not path.endswith(".py") and is_test_file(path, rule)

    return sorted(p for p, status in changed.items() if status.startswith("A") and runs(p))


def config_files() -> tuple[str, ...]:
    """Every runner's configuration files (globs): what decides how the tests run."""
    return tuple(dict.fromkeys(g for a in ADAPTERS for g in a.config_files))


def weakening() -> re.Pattern[str]:
    """Added diff lines that skip, focus or neuter a test, in any runner's spelling."""
    marks = "|".join(a.weakening for a in ADAPTERS if a.weakening)
    return re.compile(rf"^\+.*({marks})", re.M)


def tests_in_sources(path: str) -> bool:
    """A source file of a runner whose tests live in the code's own files (Rust's)."""
    return any(a.tests_in_sources and path.endswith(a.weakening_suffixes) for a in ADAPTERS)


def removed_test(path: str, diff: str) -> str | None:
    """The mark of a test that ``diff`` (one file's) takes out of a source file."""
    for a in ADAPTERS:
        wanted = a.removed_test and path.endswith(a.weakening_suffixes)
        if wanted and (m := re.search(a.removed_test or "", diff, re.M)):
            return m.group(1)
    return None


def harness_added(path: str, diff: str) -> str | None:
    """What in ``diff`` (one test file's) takes over how that runner runs its tests."""
    for a in ADAPTERS:
        if a.harness and a.test_file(path) and re.search(a.harness[0], diff, re.M):
            return a.harness[1]
    return None


def weakening_suffixes() -> tuple[str, ...]:
    """The files whose diffs are read for those marks."""
    return tuple(dict.fromkeys(s for a in ADAPTERS for s in a.weakening_suffixes))


def missing_module() -> tuple[re.Pattern[str], ...]:
    """What each runner says when a module is not installed, the module's name first."""
    return tuple(re.compile(p) for a in ADAPTERS for p in a.missing_module)


def unrunnable() -> tuple[tuple[re.Pattern[str], str], ...]:
    """(what a runner prints when its toolchain or tool did not start, the fix)."""
    return tuple((re.compile(p, re.M), fix) for a in ADAPTERS for p, fix in a.unrunnable)


def no_tests() -> tuple[tuple[re.Pattern[str], str], ...]:
    """(what a runner prints when it found no test, where it looks for tests)."""
    return tuple((re.compile(p, re.M), where) for a in ADAPTERS for p, where in a.no_tests)
