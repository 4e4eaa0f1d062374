"""Where a tree's own code is imported from, so the tests import the candidate.

A src-layout package installed with ``pip install -e .`` imports the user's checkout, not
the worktree under test; an installed copy in the test interpreter can shadow it too.
The tree's import roots go first on ``PYTHONPATH`` (ahead of every ``.pth`` and
site-packages entry), and the baseline checks, inside the test run, that each of the
project's top-level modules resolves into the tree.
"""

from __future__ import annotations

from pathlib import Path

from selfforge.repo.testpaths import TEST_FOLDERS, TestRule, rule_for

_NOT_MODULES = {"setup", "conftest", "noxfile", "tasks", "fabfile", "manage", "docs", "test"}
_NOT_PACKAGES = TEST_FOLDERS | {"docs", "doc", "examples", "benchmarks", "bench"}


def import_roots(tree: Path) -> list[Path]:
    """The tree's ``src/`` (when it holds code) and the tree itself, in that order."""
    src = tree / "src"
    return [src, tree] if src.is_dir() and _modules_in(src, rule_for(tree)) else [tree]


def project_modules(tree: Path, limit: int = 8) -> list[str]:
    """The project's own top-level modules: those under ``src/``, else at the root."""
    src, rule = tree / "src", rule_for(tree)
    found = _modules_in(src, rule) if src.is_dir() else []
    return (found or _modules_in(tree, rule))[:limit]


def _modules_in(folder: Path, rule: TestRule) -> list[str]:
    names = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if name.startswith((".", "_")) or (not name.isidentifier() and not name.endswith(".py")):
            continue
        if entry.is_dir() and (entry / "__init__.py").is_file() and name not in _NOT_PACKAGES:
            names.append(name)
        elif entry.suffix == ".py" and entry.is_file():
            stem = entry.stem
            if stem.isidentifier() and stem not in _NOT_MODULES and not rule.is_test_file(name):
                names.append(stem)
    return names


def outside(tree: Path, imports: dict[str, str | None]) -> dict[str, str]:
    """Modules the test run loads from somewhere other than ``tree``."""
    root = tree.resolve()
    wrong = {}
    for name, origin in imports.items():
        if origin and root not in Path(origin).resolve().parents:
            wrong[name] = origin
    return wrong
