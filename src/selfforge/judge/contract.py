"""The test contract: the base's tests, in their base version and with the base's test
infrastructure, run against the candidate's code.

Whatever a change does to test files — adds a test method to an existing file, renames a
fixture, weakens an assertion, skips or deletes a test — the run that judges the code
sees the tests as they were on the base: every test path (test modules, ``conftest.py``,
helpers and data in test folders, snapshots, ``testdata/``), the runners' configuration
files, the pytest or JS runner settings of a file that mixes them with other settings,
and a Rust source's inline ``#[cfg(test)]`` modules. A test the change adds is absent
there; it runs in the candidate's own suite, after. So a change can neither weaken the
tests that judge it nor claim progress through infrastructure it brings along.

``judged_commit`` builds that tree as a commit (parent: the base) with a private index:
nothing in the user's repository or the candidate's worktree changes.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfforge.judge.rules.integrity import _entry_points
from selfforge.judge.rules.integrity_lang import (
    _PACKAGE_TEST_KEYS,
    BUILD_CONFIG,
    INLINE_TESTS,
    TEST_CONFIG,
    _json,
    _matches,
)
from selfforge.repo import git
from selfforge.repo.testpaths import TestRule, pytest_settings

# Build configuration (BUILD_CONFIG) is code, not test infrastructure: the judging run
# keeps the candidate's version; a person reviews a change to it (``run`` refuses one).
RUNNER_CONFIG = (*(p for p in TEST_CONFIG if p not in BUILD_CONFIG), "pytest.ini", ".pytest.ini")
# Files that mix a test runner's settings with the project's own: the base's version is
# judged with when (and only when) those settings changed.
_MIXED = ("pyproject.toml", "setup.cfg", "tox.ini", "package.json")
_NO_OBJECT = "0" * 40


def is_infrastructure(path: str, rule: TestRule) -> bool:
    """Test code or what decides how tests run: the judging run takes the base's."""
    return rule.is_test_path(path) or _matches(path, RUNNER_CONFIG)


@dataclass(frozen=True)
class Judged:
    """The tree the judging run sees, and how it differs from the candidate's."""

    commit: str
    restored: tuple[str, ...] = ()  # paths given their base version (or removed)
    spliced: tuple[str, ...] = ()  # Rust sources given the base's inline test modules
    unpaired: tuple[str, ...] = ()  # Rust sources whose inline tests could not be paired

    @property
    def is_candidate(self) -> bool:
        return not self.restored and not self.spliced


def judged_commit(
    tree: Path, base: str, commit: str, changed: dict[str, str], rule: TestRule
) -> Judged:
    """The candidate's code with the base's tests and test infrastructure, as a commit."""
    restored = sorted(
        p
        for p in changed
        if is_infrastructure(p, rule)
        or (PurePosixPath(p).name in _MIXED and _mixed(tree, base, commit, p))
    )
    spliced: dict[str, str] = {}
    unpaired = []
    for path, status in sorted(changed.items()):
        if not path.endswith(".rs") or path in restored or status[:1] == "D":
            continue
        before, after = _show(tree, base, path), _show(tree, commit, path)
        text = with_inline_tests_of(after or "", before or "")
        if text is None:
            unpaired.append(path)
        elif text != after:
            spliced[path] = text
    if not restored and not spliced:
        return Judged(commit, unpaired=tuple(unpaired))
    sha = _write(tree, base, commit, restored, spliced)
    return Judged(sha, tuple(restored), tuple(sorted(spliced)), tuple(unpaired))


def tests_on_base(
    tree: Path, base: str, commit: str, changed: dict[str, str], rule: TestRule
) -> str | None:
    """The other way round: the base's code with the candidate's tests and test
    infrastructure (a Rust source: the base's code, the candidate's inline test modules),
    as a commit on the base — where a test the change adds shows whether it can fail on
    the code before the change. None when that is the candidate's own tree (the change
    touches only tests)."""
    taken = sorted(p for p in changed if is_infrastructure(p, rule))
    code = [p for p in changed if p not in taken]
    spliced: dict[str, str] = {}
    for path in code:
        if not path.endswith(".rs") or changed[path][:1] == "D":
            continue
        before, after = _show(tree, base, path), _show(tree, commit, path)
        if before is not None and after is not None:
            text = with_inline_tests_of(before, after)
            if text is not None and text != before:
                spliced[path] = text
    if not code:
        return None
    message = "selfforge: the base's code with the candidate's tests"
    return _write(tree, commit, base, taken, spliced, message=message, parent=base)


def with_inline_tests_of(code: str, tests: str) -> str | None:
    """``code`` (a Rust source) with the inline test modules of ``tests`` in place of its
    own, and its test module declarations (``#[cfg(test)] mod tests;``, whose file is
    test code: the base's version or none) as ``tests`` has them; None when the modules
    do not pair up (rustfmt's layout is assumed, as elsewhere)."""
    code = _with_declarations_of(code, tests)
    mine, theirs = INLINE_TESTS.findall(code), INLINE_TESTS.findall(tests)
    if mine == theirs:
        return code
    if not theirs:
        return INLINE_TESTS.sub("", code)
    if not mine:
        return code.rstrip("\n") + "\n\n" + "\n".join(theirs)
    if len(mine) != len(theirs):
        return None
    pieces = INLINE_TESTS.split(code)
    return "".join(p + (theirs[i] if i < len(theirs) else "") for i, p in enumerate(pieces))


# A test module declared in a source and kept in a file of its own (src/tests.rs).
TEST_DECLARATION = re.compile(r"(?m)^#\[cfg\(test\)\]\n(?:#\[.*\]\n)*(?:pub )?mod \w+;\n")


def _with_declarations_of(code: str, tests: str) -> str:
    mine, theirs = TEST_DECLARATION.findall(code), TEST_DECLARATION.findall(tests)
    if mine == theirs:
        return code
    kept = TEST_DECLARATION.sub("", code)
    return kept + ("\n" + "".join(theirs) if theirs else "")


def _write(
    tree: Path,
    base: str,
    commit: str,
    restored: list[str],
    spliced: dict[str, str],
    *,
    message: str = "selfforge: the candidate's code with the base's tests",
    parent: str | None = None,
) -> str:
    """A commit of ``commit``'s tree with ``restored`` paths as on ``base`` and the
    ``spliced`` texts, through an index of its own; its parent ``parent`` (``base``
    unless told)."""
    at_base = _entries(tree, base, restored)
    fd, index = tempfile.mkstemp(prefix="selfforge-judged-", suffix=".index")
    os.close(fd)
    os.unlink(index)  # read-tree writes it anew
    env = {"GIT_INDEX_FILE": index}
    try:
        git.git("read-tree", commit, cwd=tree, env=env)
        lines = [at_base.get(p, f"0 {_NO_OBJECT}\t{p}") for p in restored]
        modes = _entries(tree, commit, list(spliced))
        for path, text in spliced.items():
            blob = git.git("hash-object", "-w", "--stdin", cwd=tree, input_text=text).strip()
            mode = modes.get(path, "100644 x").split(" ", 1)[0]
            lines.append(f"{mode} {blob}\t{path}")
        git.git("update-index", "-z", "--index-info", cwd=tree, env=env,
                input_text="".join(line + "\0" for line in lines))  # fmt: skip
        sha = git.git("write-tree", cwd=tree, env=env).strip()
    finally:
        Path(index).unlink(missing_ok=True)
    env = git.identity_env(tree)
    out = git.git("commit-tree", sha, "-p", parent or base, "-m", message, cwd=tree, env=env)
    return git.remember_tree(out.strip(), sha)


def _entries(tree: Path, rev: str, paths: list[str]) -> dict[str, str]:
    """``mode sha<TAB>path`` of each of ``paths`` that ``rev`` holds."""
    if not paths:
        return {}
    out = git.git("ls-tree", "-z", rev, "--", *paths, cwd=tree)
    found = {}
    for entry in out.split("\0"):
        if "\t" not in entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, _kind, sha = meta.split()
        found[path] = f"{mode} {sha}\t{path}"
    return found


def _show(tree: Path, rev: str, path: str) -> str | None:
    proc = git.call("show", f"{rev}:{path}", cwd=tree)
    return proc.stdout if proc.returncode == 0 else None


def _mixed(tree: Path, base: str, commit: str, path: str) -> bool:
    """Did the test runner's settings in a mixed file change?"""
    return runner_settings(path, _show(tree, base, path)) != runner_settings(
        path, _show(tree, commit, path)
    )


def runner_settings(path: str, text: str | None) -> object:
    """The part of a mixed file that decides how tests run: what the model-proposal gates
    compare too (pytest's settings and plugins, a package.json's runner keys and scripts)."""
    if text is None:
        return None
    if PurePosixPath(path).name == "package.json":
        data = _json(text)
        keys = (*_PACKAGE_TEST_KEYS, "scripts")
        return {k: data.get(k) for k in keys} if isinstance(data, dict) else data
    name = PurePosixPath(path).name
    points = _entry_points(text) if name == "pyproject.toml" else None
    return (pytest_settings(name, text), points)


def with_texts(tree: Path, commit: str, texts: dict[str, str], message: str) -> str:
    """A commit of ``commit``'s tree with the files of ``texts`` given those texts (a
    mutant of its code), on ``commit``."""
    return _write(tree, commit, commit, [], texts, message=message, parent=commit)
