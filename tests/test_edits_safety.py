"""Edits that would write outside the repository, into .git, or to protected paths."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from selfforge.edits import apply_response
from selfforge.edits.safety import matching_glob


def create(path: str, content: str = "pwned\n") -> str:
    return f"{path}\n<<<<<<< SEARCH\n=======\n{content}>>>>>>> REPLACE\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "ok.py").write_text("x = 1\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    base = root.parent
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize(
    "path",
    [
        "../escape.py",
        "sub/../../escape.py",
        "/tmp/escape.py",
        "~/escape.py",
        "C:\\escape.py",
        "..\\escape.py",
        ".git/config",
        ".git/hooks/pre-commit",
        "./.git/HEAD",
        "sub/.git/x",
        ".GIT/config",
        ".git",
        "",
    ],
)
def test_paths_outside_or_into_git_are_refused(repo: Path, path: str) -> None:
    before = snapshot(repo)
    reply = create(path) + create("fine.py")
    result = apply_response(repo, reply)
    assert not result.ok and result.changed == []
    assert snapshot(repo) == before
    assert not (repo / "fine.py").exists()


def test_symlink_leading_out_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.py").write_text("x = 1\n")
    (repo / "link").symlink_to(outside, target_is_directory=True)
    (repo / "filelink.py").symlink_to(outside / "target.py")
    before = snapshot(repo)
    for path in ("link/target.py", "link/new.py", "filelink.py"):
        reply = f"{path}\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
        result = apply_response(repo, reply)
        assert not result.ok, path
        assert "outside the repository" in result.failures[0].message
        assert not apply_response(repo, create(path)).ok
    assert snapshot(repo) == before


def test_symlink_inside_repo_edits_its_target(repo: Path) -> None:
    (repo / "alias.py").symlink_to("ok.py")
    result = apply_response(
        repo, "alias.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
    )
    assert result.ok and result.changed == ["ok.py"]
    assert (repo / "alias.py").is_symlink() and (repo / "ok.py").read_text() == "x = 2\n"


def test_symlink_into_git_dir_is_refused(repo: Path) -> None:
    (repo / "cfg").symlink_to(".git/config")
    assert not apply_response(repo, create("cfg")).ok


@pytest.mark.parametrize(
    ("path", "patterns"),
    [
        ("selfforge.toml", ["selfforge.toml"]),
        ("sub/selfforge.toml", ["selfforge.toml"]),
        (".github/workflows/ci.yml", [".github/**"]),
        (".github/workflows/ci.yml", [".github/"]),
        ("tests/conftest.py", ["**/conftest.py"]),
        ("conftest.py", ["**/conftest.py"]),
        ("secrets/a/b.txt", ["secrets"]),
        ("src/x.lock", ["*.lock"]),
        (".GitHub/ci.yml", [".github/**"]),
    ],
)
def test_protected_globs_are_refused(repo: Path, path: str, patterns: list[str]) -> None:
    before = snapshot(repo)
    result = apply_response(repo, create(path), protected=patterns)
    assert not result.ok
    assert "protected" in result.failures[0].message
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("docs/selfforge.toml.md", "selfforge.toml"),
        ("src/github.py", ".github/**"),
        ("a/tests/x.py", "/tests/**"),
        ("lock.py", "*.lock"),
    ],
)
def test_protected_globs_do_not_overreach(path: str, pattern: str) -> None:
    assert matching_glob(path, [pattern]) is None


def test_directory_and_binary_targets(repo: Path) -> None:
    (repo / "src/pkg").mkdir(parents=True)
    (repo / "blob.bin").write_bytes(b"\x00\x01x = 1\n")
    assert "directory" in apply_response(repo, create("src/pkg")).failures[0].message
    reply = "blob.bin\n<<<<<<< SEARCH\nx = 1\n=======\ny\n>>>>>>> REPLACE\n"
    assert "binary" in apply_response(repo, reply).failures[0].message


def test_impossible_paths_fail_as_edits_not_exceptions(repo: Path) -> None:
    for path in ("ok.py/inner.py", "x" * 300 + ".py"):
        result = apply_response(repo, create(path))
        assert not result.ok and result.failures, path
    assert (repo / "ok.py").read_text() == "x = 1\n"


def test_fifo_is_refused_without_blocking(repo: Path) -> None:
    import os

    os.mkfifo(repo / "pipe.py")
    result = apply_response(repo, "pipe.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n")
    assert not result.ok and "not a regular file" in result.failures[0].message
