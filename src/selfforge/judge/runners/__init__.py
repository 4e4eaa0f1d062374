"""Test runners beyond pytest and unittest: one small adapter per runner.

Each adapter says how to make its runner report per-test results (flags or environment),
which toolchain folders and variables the sandbox needs for it (``home_needs``: exactly
what of the user's home), how to narrow a run to
some tests, and how to read the outcomes back into the judge's ``TestReport``. Pytest
and unittest stay in ``runner.py`` (pytest reports through the judge's own channel).

Where a runner's results come from its output, code under test that writes to the same
stream can add lines; every adapter therefore keeps the worst outcome a test is given,
and checks the runner's own summary against the per-test lines (a disagreement makes
the results untrusted, like an attacked channel). The README's threat model states the
limit.

What every adapter is built on is in ``base.py``; ``detect`` here picks the adapter for a
command (the adapters import ``base``, never this package, so no import runs in a circle).
"""

from __future__ import annotations

import re
from pathlib import Path

from selfforge.judge.runners import cargo, gotest, junit, node, tap
from selfforge.judge.runners.base import Adapter, package_scripts, words
from selfforge.repo.treefiles import NotReadable, read_bytes


def detect(
    command: str, tree: Path, explicit: str = "auto", junit_path: str = ""
) -> Adapter | None:
    """The adapter for a test command, or None for pytest/unittest (``runner.py``)."""
    junit_file = junit_path
    table: dict[str, type[Adapter]] = {
        "go": gotest.GoTest,
        "cargo": cargo.CargoTest,
        "node": node.NodeTest,
        "tap": tap.Tap,
    }
    if explicit == "junit":
        return junit.JUnit(junit_file)
    if explicit in table:
        return table[explicit]()
    if explicit in ("pytest", "unittest"):
        return None
    # The command, then what it wraps: a Makefile, a justfile, a script it names.
    for text in (f" {command} ", *_wrapped(command, tree)):
        if re.search(r"(^|[\s/])go\s+test\b", text, re.M):
            return gotest.GoTest()
        if re.search(r"(^|[\s/])cargo\s+(\+\S+\s+)?test\b", text, re.M):
            return cargo.CargoTest()
        if re.search(r"(^|[\s/])node\s+(.*\s)?--test\b", text, re.M):
            return node.NodeTest()
    if _npm_runs_node_test(command, tree):
        return node.NodeTest()
    return None


def _wrapped(command: str, tree: Path) -> list[str]:
    """The text of the files a wrapping command runs (Makefile, justfile, a script);
    none for a command that runs Python (pytest's own channel reports through any
    wrapper)."""
    w = words(command)
    if not w or re.search(r"(^|[\s/])(pytest|py\.test|python[\d.]*)(\s|$)", command):
        return []
    names = [x for x in w if "/" in x or "." in x]
    if w[0] in ("make", "gmake"):
        names += ["Makefile", "makefile", "GNUmakefile"]
    elif w[0] == "just":
        names += ["justfile", "Justfile"]
    found = []
    for name in dict.fromkeys(n.removeprefix("./") for n in names):
        try:
            found.append(read_bytes(tree, name, 256 * 1024).decode("utf-8", "replace"))
        except (NotReadable, ValueError, OSError):
            continue
    return found


def _npm_runs_node_test(command: str, tree: Path) -> bool:
    """``npm test`` / ``npm run X`` / ``yarn test`` whose package.json script is node --test."""
    w = words(command)
    if not w or w[0] not in ("npm", "yarn", "pnpm"):
        return False
    script = "test"
    if len(w) >= 3 and w[1] in ("run", "run-script"):
        script = w[2]
    elif len(w) >= 2 and w[1] not in ("test", "t"):
        return False
    scripts = package_scripts(tree)
    return bool(re.search(r"(^|[\s/])node\s+(.*\s)?--test\b", scripts.get(script, "")))
