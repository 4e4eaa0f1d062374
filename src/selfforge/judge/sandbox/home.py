"""What of the user's home a check is shown: exact folders, never a top folder of home.

Home is hidden from every check (``sandbox.hidden_places``); the toolchains a check runs
are shown again read-only, each by the folder that holds it or by the installation it
belongs to: a virtualenv, ``~/.pyenv/versions/X``, nvm's ``versions/node/vX``, a rustup
toolchain, a Go root. ``~/.local/bin`` is shown, never ``~/.local`` (whose ``share``
holds keyrings); pyenv's shims get pyenv's programs and versions, not the whole
``~/.pyenv``. A runner's own needs (rustup's toolchains, cargo's registry, the Go module
cache) are named by its adapter (``runners/``). Credentials inside what is shown are
masked on top of this (``sandbox.credentials_in``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

# A folder whose ``bin`` is on PATH is a whole installation (shown whole) when it holds
# one of these: a venv, a conda env, a rustup toolchain, a Go root, a Node install.
INSTALL_MARKERS = ("pyvenv.cfg", "conda-meta", "lib/rustlib", "pkg/tool", "include/node")
# Managers that keep one installation per child: pyenv and nvm (versions/[node/]X),
# rustup (toolchains/X).
INSTALL_PARENTS = {"versions", "toolchains"}
# What pyenv's shims run: pyenv itself, its plugins and the versions it picks among.
PYENV_PARTS = ("shims", "bin", "libexec", "plugins", "pyenv.d", "versions", "version")


def installation(folder: Path, home: Path) -> set[Path]:
    """What to show for a folder of programs: under home, the folder itself or the
    installation it belongs to; elsewhere (a venv in the checkout) its prefix as ever."""
    if not _under(folder, home) or folder == home:
        return {folder.parent if folder.name == "bin" else folder}
    parent = folder.parent
    if os.path.isfile(parent / "libexec" / "pyenv"):
        return {parent / part for part in PYENV_PARTS}
    if folder.name == "bin" and parent != home and is_installation(parent):
        return {parent, *venv_base(parent, home)}
    return {folder}


def is_installation(root: Path) -> bool:
    # os.path's tests: a place this user may not search (another's home) is not there
    if any(os.path.exists(root / marker) for marker in INSTALL_MARKERS):
        return True
    return bool(INSTALL_PARENTS & {root.parent.name, root.parent.parent.name})


def python_prefix(prefix: Path, home: Path) -> set[Path]:
    """A Python installation's prefix; one under home that is not an installation of its
    own (``--prefix ~/.local``) by its ``bin`` and ``lib`` only."""
    if _under(prefix, home) and prefix != home and not is_installation(prefix):
        return {prefix / "bin", prefix / "lib"}
    return {prefix, *venv_base(prefix, home)}


def executable_roots(exe: Path, home: Path) -> set[Path]:
    """An executable's venv (and the base installation its pyvenv.cfg names), and the
    installation its real file is in (a pipx venv behind ``~/.local/bin/tool``)."""
    roots: set[Path] = set()
    real = exe.resolve()
    for path in (exe.absolute(), real):
        venv = next((p for p in path.parents if os.path.isfile(p / "pyvenv.cfg")), None)
        if venv is not None:
            roots |= {venv, *venv_base(venv, home)}
    if os.path.exists(real):
        roots |= installation(real.parent, home)
    return roots


def venv_base(venv: Path, home: Path) -> set[Path]:
    """The base installation a venv's pyvenv.cfg points at (``home = .../bin``)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(errors="replace").splitlines()
    except OSError:
        return set()
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            base = Path(value.strip())
            return python_prefix(base.parent, home) if base.name == "bin" else {base}
    return set()


def path_entries(home: Path) -> list[Path]:
    """The PATH entries under home (home itself never)."""
    found = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            path = Path(entry).resolve()
            if path != home and _under(path, home):
                found.append(path)
    return found


def programs(words: Iterable[str], home: Path) -> list[Path]:
    """The programs a command's words name that PATH finds under home (``black`` ->
    ``~/.local/bin/black``): their real installation is shown too."""
    found = []
    for word in words:
        if word and "/" not in word and not word.startswith("-"):
            where = shutil.which(word)
            if where and _under(Path(where).resolve(), home):
                found.append(Path(where))
    return found


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents
