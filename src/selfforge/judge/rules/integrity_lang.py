"""Integrity rules for the languages beyond Python: what in a JavaScript/TypeScript, Go
or Rust change alters how it is judged.

Skips and focus marks added to tests (``.skip``, ``.only``, ``xit``, ``t.Skip``,
``#[ignore]``), tests removed from Rust sources (where unit tests live next to the
code), the runners' configuration files, snapshot files (the marks and files: each
runner's own, declared by its adapter in ``judge/runners/``), build scripts, and manifests
and lockfiles (a dependency change, refused unless ``[safety] allow_dependency_changes``;
in a person's change it needs review): Python's too (pyproject's dependency tables,
requirements files, Poetry's and uv's locks).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
import tomllib
from pathlib import Path, PurePosixPath

from selfforge.judge.rules.diffs import refusal, show_at, split_diff
from selfforge.judge.runners import registry
from selfforge.judge.verdict import Verdict

# A top-level inline test module of a Rust source, as rustfmt lays it out: the attribute,
# `mod name {`, and the `}` alone on a line that closes it.
INLINE_TESTS = re.compile(r"(?m)^#\[cfg\(test\)\]\n(?:#\[.*\]\n)*mod \w+ \{\n(?:.*\n)*?\}\n")
# Added lines that skip, focus or neuter a test, in any runner's spelling, and the files
# read for them; the files that decide how the tests run (the judge's, not the change's):
# each runner's own (judge/runners/, folded by the registry).
WEAKENING = registry.weakening()
CODE_SUFFIXES = registry.weakening_suffixes()
TEST_CONFIG = registry.config_files()
MANIFESTS = (
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
    "go.sum", "go.work", "go.work.sum", "Cargo.lock", "poetry.lock", "uv.lock", "pdm.lock",
    "Pipfile.lock",
)  # fmt: skip
# pip's requirement files: their pins count, their comments and blank lines do not.
REQUIREMENTS = ("requirements*.txt", "requirements/*.txt", "constraints*.txt")
_PACKAGE_TEST_KEYS = ("jest", "mocha", "ava", "c8", "nyc", "vitest")
# npm's overrides and yarn's resolutions pin what the dependencies resolve to.
_DEPENDENCY_KEYS = (
    "dependencies", "devDependencies", "peerDependencies", "optionalDependencies",
    "bundleDependencies", "bundledDependencies", "overrides", "resolutions",
)  # fmt: skip
_CARGO_DEPENDENCY_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")


def weakening(path: str, text: str, is_test: bool) -> str | None:
    """The problem with one file's diff, if it skips, focuses or removes a test."""
    if not path.endswith(CODE_SUFFIXES):
        return None
    in_sources = registry.tests_in_sources(path)  # Rust: unit tests beside the code
    if (is_test or in_sources) and (m := WEAKENING.search(text)):
        line = text[m.start() :].split("\n", 1)[0][1:].strip()[:80]
        return f"adds a skip or focus ({line}) in {path}"
    if in_sources and (mark := registry.removed_test(path, text)):
        return f"removes a test ({mark}) from {path}"
    return None


_HUNK = re.compile(r"^@@ -(\d+)")


def inline_test_edit(path: str, base_text: str, file_diff: str) -> str | None:
    """The problem when a Rust source's diff changes or removes lines of an inline test
    module the base has (adding tests to it is fine): an existing test edited, as in a
    test file."""
    spans = []
    for m in INLINE_TESTS.finditer(base_text):
        first = base_text.count("\n", 0, m.start()) + 1
        spans.append((first, first + m.group().count("\n") - 1))
    if not spans:
        return None
    old, in_hunk = 0, False
    for line in file_diff.splitlines():
        if m := _HUNK.match(line):
            old, in_hunk = int(m.group(1)), True
        elif in_hunk and line[:1] in (" ", "-"):
            if line[:1] == "-" and any(a <= old <= b for a, b in spans):
                return f"edits an existing test in the inline test module of {path} (line {old})"
            old += 1
    return None


def language_gate(tree: Path, base: str, changed: dict[str, str], diff: str) -> Verdict:
    """For a model's proposal: the runners' configuration, snapshots, a Go TestMain,
    skips and removed or edited inline Rust tests are refused (the judging run takes the
    base's tests either way; a model has no business changing them: adding tests to an
    inline module is fine)."""
    problems = []
    for path, status in sorted(changed.items()):
        new_snapshot = status.startswith("A") and path.endswith(".snap")
        if _matches(path, TEST_CONFIG) and not _matches(path, BUILD_CONFIG) and not new_snapshot:
            problems.append(f"changes {path}, which decides how the tests run")
        elif PurePosixPath(path).name == "package.json" and _package_tests(tree, base, path):
            problems.append(f"changes the test settings or scripts in {path}")
    for path, text in split_diff(diff).items():
        if harness := registry.harness_added(path, text):
            problems.append(f"adds {harness} in {path}, which decides how the tests run")
        elif registry.tests_in_sources(path) and (problem := weakening(path, text, False)):
            problems.append(problem)
        elif path.endswith(".rs") and changed.get(path, "")[:1] == "M":
            was = show_at(tree, base, path)
            if was is not None and (problem := inline_test_edit(path, was, text)):
                problems.append(problem)
    return refusal(problems, "how the change is judged is not the change's to decide")


def dependency_gate(tree: Path, base: str, changed: dict[str, str], *, allow_deps: bool) -> Verdict:
    """Real dependency changes (``require`` blocks, lockfiles, ``[dependencies]``,
    ``package.json`` dependencies; not go.mod's ``go`` or ``toolchain`` line or a comment)
    and build configuration (``build.rs``, ``.cargo/config``, the Rust toolchain file):
    what the sandbox cannot install offline or what decides how the code is built."""
    problems = []
    for path, _status in sorted(changed.items()):
        name = PurePosixPath(path).name
        if _matches(path, BUILD_CONFIG):
            problems.append(f"changes {path}, which decides how the code is built")
        elif name == "package.json":
            problems += [] if allow_deps else _package_deps(tree, base, path)
        elif name == "Cargo.toml":
            problems += _cargo_toml(tree, base, path, allow_deps)
        elif name == "pyproject.toml":
            problems += [] if allow_deps else _pyproject_deps(tree, base, path)
        elif _matches(path, REQUIREMENTS):
            if not allow_deps and _pins(show_at(tree, base, path)) != _pins(_read(tree, path)):
                problems.append(_dependency(path))
        elif name == "go.mod":
            if not allow_deps and _go_requirements(show_at(tree, base, path)) != _go_requirements(
                _read(tree, path)
            ):
                problems.append(_dependency(path))
        elif _matches(path, MANIFESTS) and not allow_deps:
            problems.append(_dependency(path))
    return refusal(problems, "a person decides on dependencies and how the code is built")


BUILD_CONFIG = ("build.rs", ".cargo/config", ".cargo/config.toml", "rust-toolchain",
                "rust-toolchain.toml")  # fmt: skip
_GO_DIRECTIVE = re.compile(r"^\s*(require|replace|exclude|retract)\b\s*(\(?)(.*)$")


def _go_requirements(text: str | None) -> list[str]:
    """go.mod's require, replace, exclude and retract lines, comments and spacing aside:
    the ``go`` and ``toolchain`` lines and the module path are no dependency change."""
    if text is None:
        return []
    found, block = [], None
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block is not None:
            if line == ")":
                block = None
            else:
                found.append(f"{block} {' '.join(line.split())}")
            continue
        if m := _GO_DIRECTIVE.match(line):
            if m.group(2) == "(":
                block = m.group(1)
            else:
                found.append(f"{m.group(1)} {' '.join(m.group(3).split())}")
    return sorted(found)


def _pyproject_deps(tree: Path, base: str, path: str) -> list[str]:
    """PEP 621's dependencies and extras, PEP 735's groups, the build backend's
    requirements and Poetry's tables; the version, description or tools' settings are
    no dependency change."""
    before, after = _toml(show_at(tree, base, path)), _toml(_read(tree, path))
    return [_dependency(path)] if _python_deps(before) != _python_deps(after) else []


def _python_deps(data: dict) -> list[object]:
    project, poetry = _get(data, "project"), _get(_get(data, "tool"), "poetry")
    return [
        _get(project, "dependencies"),
        _get(project, "optional-dependencies"),
        data.get("dependency-groups"),
        _get(data.get("build-system"), "requires"),
        *(_get(poetry, k) for k in ("dependencies", "dev-dependencies", "group")),
        data.get("<unparsable>"),
    ]


_PIP_COMMENT = re.compile(r"(^|\s)#.*")


def _pins(text: str | None) -> list[str]:
    """A requirements file's requirement and option lines, comments and spacing aside (a
    ``#`` after a space starts a comment; one inside a URL, ``#egg=``, does not)."""
    lines = (_PIP_COMMENT.sub("", raw).strip() for raw in (text or "").splitlines())
    return [" ".join(line.split()) for line in lines if line]


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    """The file's name matches one of ``patterns``, or its path ends in one."""
    names, paths = _globs(patterns)
    return names.match(PurePosixPath(path).name) is not None or paths.match(path) is not None


def warm() -> None:
    """Compile the gate's patterns now (a resident selfforge does, once)."""
    _globs(TEST_CONFIG)
    _globs(MANIFESTS)
    _globs(REQUIREMENTS)


@functools.cache
def _globs(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """One regex for the names and one for the path ends: compiled once, not per pattern
    and call (fnmatch compiles each on first use: milliseconds on every command)."""
    names = "|".join(fnmatch.translate(p) for p in patterns)
    ends = "|".join(fnmatch.translate(f"*{p}") for p in patterns)
    return re.compile(names), re.compile(ends)


def _dependency(path: str) -> str:
    return (
        f"changes {path}, a dependency change ([safety] allow_dependency_changes = true allows it)"
    )


def _package_tests(tree: Path, base: str, path: str) -> bool:
    before, after = _json(show_at(tree, base, path)), _json(_read(tree, path))
    return any(_get(before, k) != _get(after, k) for k in (*_PACKAGE_TEST_KEYS, "scripts"))


def _package_deps(tree: Path, base: str, path: str) -> list[str]:
    before, after = _json(show_at(tree, base, path)), _json(_read(tree, path))
    if any(_get(before, k) != _get(after, k) for k in _DEPENDENCY_KEYS):
        return [_dependency(path)]
    return []


# What in Cargo.toml decides how the code or its tests are built, beside dependencies:
# the build script, targets and their harness, profiles, patched sources. A package's
# metadata (version, license, description, …) and its features are neither.
_CARGO_BUILD_KEYS = ("lib", "bin", "test", "bench", "example", "profile", "patch", "replace")


def _cargo_toml(tree: Path, base: str, path: str, allow_deps: bool) -> list[str]:
    before, after = _toml(show_at(tree, base, path)), _toml(_read(tree, path))
    problems = []
    build = [k for k in _CARGO_BUILD_KEYS if before.get(k) != after.get(k)]
    if _get(before.get("package"), "build") != _get(after.get("package"), "build"):
        build.insert(0, "package.build")
    if "<unparsable>" in after:
        build.append("the whole file (it does not parse)")
    if build:
        problems.append(f"changes how {path} builds the code or its tests ({', '.join(build)})")
    if not allow_deps and _cargo_deps(before) != _cargo_deps(after):
        problems.append(_dependency(path))
    return problems


def _cargo_deps(data: dict) -> list[object]:
    """Every dependency table, the target-specific ones and the workspace's included."""
    tables = [data.get(k) for k in _CARGO_DEPENDENCY_TABLES]
    targets = data.get("target") if isinstance(data.get("target"), dict) else {}
    for spec in targets.values():
        tables += [
            spec.get(k) if isinstance(spec, dict) else spec for k in _CARGO_DEPENDENCY_TABLES
        ]
    workspace = data.get("workspace") if isinstance(data.get("workspace"), dict) else {}
    return [*tables, workspace.get("dependencies")]


def _get(data: object, key: str) -> object:
    return data.get(key) if isinstance(data, dict) else None


def _json(text: str | None) -> object:
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return "unparsable"


def _toml(text: str | None) -> dict:
    try:
        return tomllib.loads(text) if text is not None else {}
    except tomllib.TOMLDecodeError:
        return {"<unparsable>": True}


def _read(tree: Path, path: str) -> str | None:
    from selfforge.repo.treefiles import NotReadable, read_text

    try:
        return read_text(tree, path)
    except NotReadable:
        return None
