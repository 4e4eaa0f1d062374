"""selfforge never follows a path out of the tree (#21.2).

A test in the target repository leaves `leak -> $HOME/.ssh/id_ed25519` and puts the same
symlink in place of `calc.py` (the file the repair prompt shows). selfforge runs outside
the sandbox: before, it read the key through the link into the repair prompt (journaled,
sent to the model) and `git add -A` made `leak` part of the next round's change. The HOME
here is a temporary one with a fake key.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from selfforge.repo import treefiles

from conftest import CALC, FIX_ADD, PYTEST, TEST_CALC, cli, directives, git, log_json, make_repo

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- canary-symlink-8c2e -----END-----"

# calc.py is swapped only once add() was changed (in the candidate's runs): the baseline
# refuses a tree whose modules resolve out of it, which is a defense of its own.
PLANT = """\
import os

from calc import add

KEY = {key!r}


def test_plant():
    os.symlink(KEY, "leak")
    os.mkfifo("pipe")
    if add(2, 3) != -1:
        for name in ("calc.py", "test_calc.py"):  # what the repair prompt shows
            os.remove(name)
            os.symlink(KEY, name)
    assert False, "planted"
"""

WRONG_FIX = """calc.py
<<<<<<< SEARCH
def add(a, b):
    return a - b
=======
def add(a, b):
    return a * b
>>>>>>> REPLACE
"""


def _world(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text(KEY)
    files = {
        "calc.py": CALC,
        "test_calc.py": TEST_CALC,
        "test_zz_plant.py": PLANT.format(key=str(key)),
    }
    repo = make_repo(tmp_path / "repo", files, directives(PYTEST, max_repairs=1))
    return repo, home


def _journal_text(repo: Path) -> str:
    with sqlite3.connect(repo / ".selfforge" / "journal.db") as db:
        rows = [
            *db.execute("SELECT prompt FROM model_calls"),
            *db.execute("SELECT response FROM model_calls"),
            *db.execute("SELECT output FROM checks"),
            *db.execute("SELECT coalesce(diff, '') FROM attempts"),
        ]
    return "\n".join(str(r[0]) for r in rows)


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox and mkfifo: Linux")
def test_what_the_tests_leave_is_never_read_staged_or_landed(tmp_path: Path, script) -> None:
    repo, home = _world(tmp_path)
    spec = script(propose=[WRONG_FIX, FIX_ADD])
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    proc = cli("run", "--repo", str(repo), "--model", spec, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [attempt] = log_json(repo)
    assert attempt["repairs"] == 1, attempt  # the repair prompt was built after the tests ran
    shown = cli("show", "last", "--prompts", "--repo", str(repo), check=True).stdout
    assert "repair" in shown.lower() or shown.count("propose") >= 2
    assert "canary-symlink" not in shown
    assert "canary-symlink" not in _journal_text(repo)
    # The repair prompt showed the test file as the candidate holds it, not the target.
    assert shown.count("def test_add():") >= 2
    # What landed is the edited file and nothing the tests left.
    assert attempt["outcome"] == "accepted", attempt
    files = git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert "leak" not in files and "pipe" not in files
    assert git(repo, "show", "HEAD:calc.py").startswith("def add(a, b):\n    return a + b")


def test_control_following_the_link_reads_the_key(tmp_path: Path) -> None:
    """The planted test does what it says: run outside selfforge, it leaves links that a
    plain read follows to the key; the one reader selfforge uses describes them instead."""
    repo, _ = _world(tmp_path)
    (repo / "calc.py").write_text(CALC.replace("a - b", "a * b", 1))  # as the candidate
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_zz_plant.py"],
        cwd=repo,
        capture_output=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert (repo / "test_calc.py").read_text() == KEY  # what selfforge used to do
    assert (repo / "leak").read_text() == KEY
    for rel in ("calc.py", "test_calc.py", "leak"):
        with pytest.raises(treefiles.NotReadable, match=r"symlink to .* \(outside the tree\)"):
            treefiles.read_text(repo, rel)
    assert "canary" not in treefiles.shown_text(repo, "calc.py")
    with pytest.raises(treefiles.NotReadable, match="a fifo"):
        treefiles.read_text(repo, "pipe")  # described, never opened for reading (it blocks)


def test_a_link_inside_the_tree_is_read(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "alias.py").symlink_to("src/a.py")
    assert treefiles.read_text(tmp_path, "alias.py") == "x = 1\n"


def test_a_committed_symlink_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    """A change that adds a link leading out (here a user's commit judged by `check`;
    the edit engine never writes links) is refused by the judge, with the link named;
    links that stay inside, even through other links, are fine."""
    repo, home = _world(tmp_path)
    (repo / "inside.py").symlink_to("calc.py")
    (repo / "up").symlink_to(".")
    (repo / "sneaky").symlink_to("up/..")  # inside by its text, out through `up`
    (repo / "leak").symlink_to(home / ".ssh" / "id_ed25519")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    proc = cli("check", "--repo", str(repo))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "adds a symlink leak -> " in proc.stdout
    assert "sneaky" in proc.stdout
    assert "inside.py" not in proc.stdout.split("integrity", 1)[-1]


def test_only_the_edited_paths_are_staged(tmp_path: Path) -> None:
    """Whatever else the tree holds (a check's leftovers, a symlink out) stays out of the
    change; a deleted file is staged as deleted; an ignored file stays out as before."""
    from selfforge.run.attempt import stage_paths

    repo = make_repo(
        tmp_path / "repo", {"a.py": "a = 1\n", "b.py": "b = 1\n", ".gitignore": "build/\n"}
    )
    (repo / "a.py").write_text("a = 2\n")
    (repo / "b.py").unlink()
    (repo / "leak").symlink_to(tmp_path / "key")
    (repo / "stray.py").write_text("x = 1\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("o = 1\n")
    stage_paths(repo, ["a.py", "b.py", "build/out.py"])
    staged = git(repo, "diff", "--cached", "--name-status").split("\n")
    assert sorted(line for line in staged if line) == ["D\tb.py", "M\ta.py"]


def test_restoring_a_tree_removes_what_git_does_not_see(tmp_path: Path) -> None:
    """git clean leaves FIFOs and sockets; the restore after every check does not."""
    import socket

    from selfforge.judge.suite_runs import restore

    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n", "d/b.py": "b = 1\n"})
    head = git(repo, "rev-parse", "HEAD").strip()
    os.mkfifo(repo / "d" / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(repo / "sock"))
    (repo / "a.py").unlink()
    (repo / "a.py").symlink_to(tmp_path / "key")
    git(repo, "clean", "-q", "-ffdx")
    assert (repo / "d" / "pipe").exists()  # the control: git alone leaves it
    restore(repo, head)
    server.close()
    assert not (repo / "d" / "pipe").exists() and not (repo / "sock").exists()
    assert not (repo / "a.py").is_symlink() and (repo / "a.py").read_text() == "a = 1\n"
    # A tracked folder swapped for a link out, and a nested repository: restored and
    # removed, and nothing written through the link.
    outside = tmp_path / "outside"
    outside.mkdir()
    for path in (repo / "d").iterdir():
        path.unlink()
    (repo / "d").rmdir()
    (repo / "d").symlink_to(outside)
    subprocess.run(["git", "init", "-q", str(repo / "nested")], check=True)
    restore(repo, head)
    assert not (repo / "d").is_symlink() and (repo / "d" / "b.py").read_text() == "b = 1\n"
    assert list(outside.iterdir()) == [] and not (repo / "nested").exists()
