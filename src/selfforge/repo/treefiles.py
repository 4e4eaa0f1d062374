"""Reading a worktree's files without leaving the tree: the one way selfforge does it.

Checks run candidate code that can leave anything in a worktree: a symlink to
``~/.ssh/id_ed25519`` in place of a source file, a FIFO that blocks whoever opens it.
selfforge itself runs outside the sandbox, so everything it reads from a worktree for a
prompt, a repair round, a stage or a gate comes through here: a path whose real location
leaves the tree is never opened, the last component is opened with ``O_NOFOLLOW`` (a link
swapped in meanwhile fails instead of being followed), and what is not a regular file is
described ("symlink to …", "fifo"), never read.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a fifo"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotReadable(Exception):
    """The path is not a regular file inside the tree; the message says what it is."""


def leaves_tree(root: Path, rel: str) -> bool:
    """Whether ``rel``'s real location (every symlink on the way followed) is outside ``root``."""
    real_root = root.resolve()
    return not (root / rel).resolve().is_relative_to(real_root)


def describe(root: Path, rel: str) -> str:
    """What ``rel`` is, without reading it: "a regular file", "a symlink to …", "a fifo"…"""
    path = root / rel
    try:
        info = path.lstat()
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path)
        where = "outside the tree" if leaves_tree(root, rel) else "inside the tree"
        return f"a symlink to {target} ({where})"
    for test, name in _KINDS:
        if test(info.st_mode):
            return name
    return "a regular file"


def read_bytes(root: Path, rel: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``rel`` inside ``root`` (at most ``limit``); a symlink
    that stays inside the tree is followed. NotReadable names anything else."""
    path = root / rel
    if "/" not in rel and rel not in ("", ".", "..") and not path.is_symlink():
        # A name in ``root`` that is no link is where it says: nothing to resolve (a link
        # swapped in meanwhile fails O_NOFOLLOW below). Most reads are of such names.
        real = path
    else:
        real = path.resolve()
        if not real.is_relative_to(root.resolve()):
            raise NotReadable(f"{rel} is {describe(root, rel)}: not read")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise NotReadable(f"{rel} is {describe(root, rel)}: not read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotReadable(f"{rel} is {describe(root, rel)}: not read")
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if limit is None else handle.read(limit)


def read_text(root: Path, rel: str) -> str:
    """The file's text (undecodable bytes replaced), or NotReadable as for read_bytes."""
    return read_bytes(root, rel).decode("utf-8", errors="replace")


def shown_text(root: Path, rel: str) -> str:
    """The text a prompt shows for ``rel``: the file, or a line saying what it is instead."""
    try:
        return read_text(root, rel)
    except NotReadable as exc:
        return f"({exc})"


def remove_special_files(tree: Path) -> None:
    """Remove the FIFOs, sockets and devices a check left in ``tree``: git sees none of
    them, so ``git clean`` leaves them behind (restoring a tree calls this after it)."""
    for top, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = os.path.join(top, name)
            with contextlib.suppress(FileNotFoundError):
                mode = os.lstat(path).st_mode
                if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):
                    os.unlink(path)
