"""The codebase index on real git repositories: contents, and incremental updates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from selfforge.context.index import open_index
from selfforge.errors import UsageError


def _git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        cwd=root,
        check=True,
    )
    return root


FILES = {
    "pkg/__init__.py": '"""The package."""\n',
    "pkg/shapes.py": (
        '"""Shapes and their areas."""\n\n'
        "from .units import to_metres\n\n\n"
        "class Circle:\n"
        '    """A circle of a given radius."""\n\n'
        "    def area(self, scale: float = 1.0) -> float:\n"
        '        """Area in square metres."""\n'
        "        return 3.14 * to_metres(self.r) ** 2\n"
    ),
    "pkg/units.py": "def to_metres(x: float) -> float:\n    return x / 100\n",
    "README.md": "# demo\n",
    ".gitignore": "ignored.py\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _git_repo(tmp_path / "repo", FILES)


def test_cold_index_records_definitions_imports_and_references(repo: Path) -> None:
    index = open_index(repo / ".selfforge")
    stats = index.update(repo)
    assert stats.parsed == stats.files == 5
    defs = {(d.path, d.parent, d.name): d for d in index.definitions()}
    area = defs[("pkg/shapes.py", "Circle", "area")]
    assert area.kind == "method"
    assert area.signature == "def area(self, scale: float = 1.0) -> float"
    assert area.doc == "Area in square metres."
    assert defs[("pkg/shapes.py", "", "Circle")].doc == "A circle of a given radius."
    assert ("pkg/shapes.py", "pkg.units") in index.imports()
    assert ("pkg/shapes.py", "to_metres", 2) in index.references()
    assert {f.path: f.doc for f in index.files()}["pkg/shapes.py"] == "Shapes and their areas."
    assert (repo / ".selfforge" / "index.db").is_file()


def test_second_run_reparses_only_the_changed_file(repo: Path) -> None:
    index = open_index(repo / ".selfforge")
    index.update(repo)
    (repo / "pkg/units.py").write_text("def to_feet(x: float) -> float:\n    return x * 3.3\n")
    stats = index.update(repo)
    assert (stats.parsed, stats.unchanged) == (1, 4)
    names = {d.name for d in index.definitions("pkg/units.py")}
    assert names == {"to_feet"}
    assert index.update(repo).parsed == 0


def test_touching_a_file_without_changing_it_does_not_reparse(repo: Path) -> None:
    index = open_index(repo / ".selfforge")
    index.update(repo)
    text = (repo / "pkg/units.py").read_text()
    (repo / "pkg/units.py").write_text(text)
    assert index.update(repo).parsed == 0


def test_untracked_files_count_ignored_and_state_files_do_not(repo: Path) -> None:
    (repo / "new.py").write_text("def fresh():\n    pass\n")
    (repo / "ignored.py").write_text("def hidden():\n    pass\n")
    (repo / ".selfforge" / "notes.py").parent.mkdir(exist_ok=True)
    (repo / ".selfforge" / "notes.py").write_text("def state():\n    pass\n")
    (repo / "blob.py").write_bytes(b"\x00\x01binary")
    index = open_index(repo / ".selfforge")
    stats = index.update(repo)
    paths = {f.path for f in index.files()}
    assert "new.py" in paths
    assert not paths & {"ignored.py", ".selfforge/notes.py", "blob.py"}
    assert stats.skipped == 1
    # Files changed within two seconds of an index run are re-read (racy); age them.
    for path in repo.rglob("*"):
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns - 10**10))
    index.update(repo)
    assert index.update(repo).skipped == 0  # a binary is not read again


def test_deleted_files_leave_the_index(repo: Path) -> None:
    index = open_index(repo / ".selfforge")
    index.update(repo)
    (repo / "pkg/units.py").unlink()
    stats = index.update(repo)
    assert stats.removed == 1
    assert "pkg/units.py" not in {f.path for f in index.files()}
    assert not index.definitions("pkg/units.py")


def test_relative_imports_resolve_to_absolute_modules(tmp_path: Path) -> None:
    repo = _git_repo(
        tmp_path / "r",
        {
            "src/app/__init__.py": "from . import core\n",
            "src/app/sub/mod.py": "from ..core import run\nfrom .. import util\n",
        },
    )
    index = open_index(repo / ".selfforge")
    index.update(repo)
    imports = set(index.imports())
    assert ("src/app/__init__.py", "src.app.core") in imports
    assert ("src/app/sub/mod.py", "src.app.core") in imports
    assert ("src/app/sub/mod.py", "src.app.util") in imports


def test_many_files_index_in_parallel_and_match_a_serial_run(tmp_path: Path) -> None:
    files = {f"m/mod{i}.py": f"def f{i}(x):\n    return g{i}(x)\n" for i in range(160)}
    repo = _git_repo(tmp_path / "big", files)
    index = open_index(repo / ".selfforge")
    assert index.update(repo).parsed == 160
    assert len(index.definitions()) == 160


def test_a_fresh_checkout_of_many_known_files_is_checked_without_starting_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files whose time cannot vouch for them (a checkout rewrote them all, or they are
    too close to the last indexing) are hashed in-process: starting workers costs more
    than hashing a thousand. A file whose bytes did change among them is parsed again."""
    from selfforge.context import scan

    files = {f"m/mod{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(200)}
    repo = _git_repo(tmp_path / "big", files)
    index = open_index(repo / ".selfforge")
    index.update(repo)
    started: list[int] = []
    real = scan.ProcessPoolExecutor

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(scan, "ProcessPoolExecutor", counted)
    for path in files:  # what a fresh checkout does: every file rewritten, same bytes
        (repo / path).write_text(files[path])
    (repo / "m/mod7.py").write_text("def renamed(x):\n    return x\n")
    stats = index.update(repo)
    assert stats.parsed == 1 and stats.unchanged == 199 and started == []
    assert "renamed" in {d.name for d in index.definitions()}
    assert "f7" not in {d.name for d in index.definitions()}


def test_not_a_git_repository_is_a_usage_error(tmp_path: Path) -> None:
    index = open_index(tmp_path / ".selfforge")
    with pytest.raises(UsageError, match="not a git repository"):
        index.update(tmp_path)


def test_a_damaged_index_is_rebuilt(repo: Path) -> None:
    (repo / ".selfforge").mkdir()
    (repo / ".selfforge" / "index.db").write_bytes(b"not a database" * 100)
    index = open_index(repo / ".selfforge")
    assert index.update(repo).parsed == 5
