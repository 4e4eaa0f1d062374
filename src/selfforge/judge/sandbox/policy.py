"""The sandbox policy of one check: what it may write, what is hidden from it, what is
shown again (toolchains under home, by exact folder: ``home.py``), what is masked
(credentials among those), and the binds it needs (the results channel, a throwaway git
dir, provided dependencies). The parts every check of a run shares are worked out once,
and can be started ahead."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox import check_git
from selfforge.judge.sandbox.home import programs

if TYPE_CHECKING:
    from selfforge.judge.runners.channel import Channel
    from selfforge.judge.sandbox.check_space import CheckSpace


def check_policy(
    space: CheckSpace,
    tree: Path,
    command: str,
    channel: Channel | None,
    head: str | None,
) -> sandbox.Policy:
    """The policy of ``command`` run on ``tree`` (a worktree at ``head``)."""
    hidden, readable, masked = _shared(space, command)
    binds = []
    if channel is not None:
        binds.append(sandbox.Bind(channel.dir, Path(channel.plugin_path(True))))
    binds += check_git.binds(space.git_common_dir, tree, head)
    binds += [sandbox.Bind(Path(source), tree / rel) for source, rel in space.provided]
    return sandbox.Policy(
        writable=(tree.resolve(),),
        hidden=hidden,
        readable=readable,
        binds=tuple(binds),
        network=space.network,
        tmp_mb=space.tmp_mb,
        masked=masked,
    )


def policy_ahead(space: CheckSpace, command: str | None) -> None:
    """Start, in a thread, what every check's sandbox policy needs first and is the same
    for all of them: the places hidden and shown, and the credentials among those shown
    (a walk of the toolchain folders under home). The run sets up meanwhile; the first
    check waits for a search still under way rather than starting its own."""
    if not command or not space.sandboxed or sandbox.inside():
        return

    def ahead() -> None:
        with contextlib.suppress(Exception):  # the check itself says what went wrong
            _shared(space, command)

    threading.Thread(target=ahead, name="selfforge-policy", daemon=True).start()


def _shared(
    space: CheckSpace, command: str
) -> tuple[tuple[Path, ...], tuple[Path, ...], tuple[Path, ...]]:
    """(hidden, shown, masked): the same for every check of a run with these executables."""
    hidden, readable = _places(space, tuple(_executables(command)))
    return hidden, readable, sandbox.credentials_in(readable)


@functools.lru_cache(maxsize=32)
def _places(
    space: CheckSpace, executables: tuple[Path, ...]
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(hidden, readable) for a repository's checks; the same for every check of a run."""
    hidden = (
        *sandbox.hidden_places(space.repo, space.git_common_dir),
        *(p.resolve() for p in space.hidden),
    )
    # Toolchains under the home folder are shown again, but never one that holds the
    # checkout, its git directory, selfforge's config or a place the directives hide
    # (every hidden place but home); nothing the directives hide is shown again.
    home = Path.home().resolve()
    roots = sandbox.runtime_roots(executables, protect=[p for p in hidden if p != home])
    kept = [h.resolve() for h in space.hidden]
    shown = [
        p for p in space.readable if not any(h in (p.resolve(), *p.resolve().parents) for h in kept)
    ]
    return hidden, (*roots, *shown)


def _executables(command: str) -> list[Path]:
    """Absolute executables a command names (an anchored ``.venv/bin/python``), and the
    programs it names that PATH finds under home (their installation is shown)."""
    found = []
    words = [w.strip("'\"") for w in re.split(r"[\s;&|()]+", command)]
    for word in words:
        if word.startswith("/") and os.access(word, os.X_OK) and not os.path.isdir(word):
            found.append(Path(word))
    return [*found, *programs(words, Path.home().resolve())]


def shown_in_home(space: CheckSpace, command: str) -> tuple[Path, ...]:
    """What of the user's home a check of ``command`` is shown, read-only (doctor lists
    it); ``space.readable`` holds the runner's own needs where it has one."""
    _, readable = _places(space, tuple(_executables(command)))
    user = Path.home().resolve()
    inside = {p.resolve() for p in readable if os.path.exists(p)}
    return tuple(sorted(p for p in inside if p != user and user in p.parents))
