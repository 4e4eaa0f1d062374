"""Where selfforge's copies of the code live (trees.py): a private folder per user outside
the checkout. A check is shown its own tree there and nothing else of the folder, with the
real bubblewrap; the folder is refused when it is not the user's alone; an older
selfforge's trees in .selfforge/ go quietly; a wiped folder is made again."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfforge.repo import trees

from conftest import (
    CALC,
    FIX_ADD,
    TEST_CALC,
    cli,
    directives,
    git,
    left_worktrees,
    log_json,
    make_repo,
    trees_dir,
)

SEES_ONLY_ITS_TREE = """import os
from pathlib import Path

ROOT = Path({root!r})


def test_sees_only_its_own_tree():
    here = Path(__file__).resolve().parent
    assert ROOT in here.parents, here
    folder, kind, slot = here.relative_to(ROOT).parts
    assert os.listdir(ROOT) == [folder]  # no other repository's trees
    assert os.listdir(ROOT / folder) == [kind]  # no scratch git dirs, no setup
    assert os.listdir(ROOT / folder / kind) == [slot]  # not the base's kept tree
    from calc import add  # and it checks the fix: a new test must be able to fail

    assert add(2, 3) == 5
"""


def _new_file(path: str, text: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n=======\n{text}>>>>>>> REPLACE\n"


def _repo(where: Path) -> Path:
    # its own pytest.ini: pytest's rootdir is the tree even where the trees folder is
    # inside another project (as next to this file: selfforge's pyproject.toml)
    files = {"calc.py": CALC, "test_calc.py": TEST_CALC, "pytest.ini": "[pytest]\n"}
    return make_repo(where, files, directives())


def _run(repo: Path, model: str) -> dict[str, object]:
    cli("run", "--repo", str(repo), "--model", model, "--task", "Fix add() so test_add passes")
    return log_json(repo)[-1]


@pytest.fixture(params=["default", "shown"])
def trees_root(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The trees folder: /var/tmp/selfforge-<uid> (a private tmpfs in the sandbox: the
    tree's bind must come after it), or a folder the sandbox would show every check if
    selfforge did not hide it (one next to this file: no tmpfs of the sandbox covers it)."""
    if request.param == "default":
        monkeypatch.delenv(trees.TREES_ENV)
        existed = trees.root_path().exists()
        yield trees.private_root()
        if not existed:  # made by this test: gone with it
            with contextlib.suppress(OSError):
                trees.root_path().rmdir()
        return
    here = Path(__file__).resolve().parent.parent / "build"  # ignored by git
    try:
        here.mkdir(exist_ok=True)
        made = Path(tempfile.mkdtemp(prefix="trees-", dir=here))
    except OSError:
        pytest.skip(f"{here} is not writable")
    monkeypatch.setenv(trees.TREES_ENV, str(made / "trees"))
    yield made / "trees"
    shutil.rmtree(made, ignore_errors=True)
    with contextlib.suppress(OSError):
        here.rmdir()


def test_a_check_sees_its_own_tree_and_nothing_else_of_the_trees_folder(
    tmp_path: Path, script, trees_root: Path
) -> None:
    other = _repo(tmp_path / "other")
    mine = _repo(tmp_path / "mine")
    try:
        assert _run(other, script(propose=[FIX_ADD]))["landed"]  # its trees are there
        assert (trees_dir(other) / "worktrees" / "baseline").is_dir()
        probe = _new_file("test_trees.py", SEES_ONLY_ITS_TREE.format(root=str(trees_root)))
        last = _run(mine, script(propose=[FIX_ADD + "\n" + probe]))
        assert (last["outcome"], last["landed"]) == ("accepted", True), last
        assert (mine / "test_trees.py").is_file()  # its test ran and passed in the sandbox
        assert (trees_dir(mine) / "worktrees" / "baseline").is_dir()  # there, but hidden
    finally:  # the default place is the user's: leave nothing of the test's in it
        for repo in (other, mine):
            cli("clean", "--repo", str(repo))
            assert not trees_dir(repo).exists()


def test_the_trees_folder_is_refused_unless_it_is_the_users_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cases = {"link": tmp_path / "link", "open": tmp_path / "open"}
    cases["link"].symlink_to(elsewhere)
    cases["open"].mkdir()
    cases["open"].chmod(0o777)
    for why, folder in (("a symbolic link", cases["link"]), ("writable by others", cases["open"])):
        monkeypatch.setenv(trees.TREES_ENV, str(folder))
        checked = cli("check", "--repo", str(repo), "HEAD")
        assert checked.returncode == 2, checked.stdout + checked.stderr  # could not judge
        line = checked.stderr.strip()
        assert f"{folder}, where selfforge keeps its copies of your code, is {why}" in line
        assert "set SELFFORGE_TREES to a folder only you can write" in line
        assert "Traceback" not in checked.stderr and len(line.splitlines()) == 1
    assert list(elsewhere.iterdir()) == [] and list(cases["open"].iterdir()) == []


def test_a_new_trees_folder_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(trees.TREES_ENV, str(tmp_path / "made" / "trees"))
    root = trees.private_root()
    assert (root.stat().st_mode & 0o777, root.stat().st_uid) == (0o700, os.getuid())


def test_an_older_selfforge_s_trees_in_the_checkout_go_quietly(tmp_path: Path, script) -> None:
    """A checkout where an older selfforge kept its trees under .selfforge/ (made here by
    hand, as it did): the next run removes them through git, and says nothing of it."""
    repo = _repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD").strip()
    old = repo / ".selfforge"
    git(repo, "worktree", "add", "-q", "--detach", str(old / "worktrees" / "baseline"), head)
    (old / "tmp" / "selfforge-git-x").mkdir(parents=True)
    (old / "setup" / "k" / "tree").mkdir(parents=True)
    (old / "journal.db").touch()

    out = cli("run", "--repo", str(repo), "--model", script(propose=[FIX_ADD])).stdout

    assert log_json(repo)[-1]["landed"] and "recovered" not in out
    assert not any((old / name).exists() for name in ("worktrees", "tmp", "setup"))
    assert not (repo / ".git" / "worktrees" / "baseline1").exists()  # forgotten, not doubled
    listed = git(repo, "worktree", "list", "--porcelain")
    assert str(old) not in listed and "prunable" not in listed
    assert str(trees_dir(repo) / "worktrees" / "baseline") in listed


def test_a_wiped_trees_folder_is_made_again(tmp_path: Path, script) -> None:
    """A reboot empties /var/tmp: the kept worktrees git still lists are gone. The next run
    forgets them first and makes them again under their own names."""
    repo = _repo(tmp_path / "repo")
    assert _run(repo, script(propose=[FIX_ADD]))["landed"]
    shutil.rmtree(trees_dir(repo))
    (repo / "calc.py").write_text(CALC)  # the user brings the bug back
    git(repo, "commit", "-qam", "user's change")

    assert _run(repo, script(propose=[FIX_ADD]))["outcome"] == "accepted"

    admin = sorted(p.name for p in (repo / ".git" / "worktrees").iterdir())
    assert admin == left_worktrees(repo)[0]  # no admin folder left over, none doubled
    assert "prunable" not in git(repo, "worktree", "list", "--porcelain")
