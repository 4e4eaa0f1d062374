"""A disk quota for what a check writes to the candidate's tree.

The private /tmp, /dev/shm, /run and /var/tmp of the sandbox are size-limited tmpfs
mounts (``sandbox.bwrap_argv``). The tree is the user's disk: a watcher measures how much
it grew since the check started, and kills the check's process group when it grows past
``[sandbox] disk_mb``; the check then fails naming the limit, as for memory or output.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

INTERVAL_S = 0.25


def tree_bytes(root: Path) -> int:
    """The bytes the files under ``root`` take on disk (``.git`` aside), links not followed."""
    total, stack = 0, [str(root)]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != ".git":
                            stack.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


class DiskWatch:
    """Kills process group ``pgid`` when ``root`` grows by more than ``limit_mb``."""

    def __init__(self, root: Path, limit_mb: int, pgid: int) -> None:
        self.root, self.limit = root, limit_mb * 2**20
        self.pgid = pgid
        began = time.monotonic()
        self.start = tree_bytes(root)
        # A large tree is walked less often: the watch never costs more than a fifth of
        # a core.
        self.interval = max(INTERVAL_S, 5 * (time.monotonic() - began))
        self.hit = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            if tree_bytes(self.root) - self.start > self.limit:
                self.hit = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pgid, signal.SIGKILL)
                return

    def stop(self) -> bool:
        """Stop watching; whether the limit was hit (measured once more at the end)."""
        self._stop.set()
        self._thread.join(timeout=5)
        if not self.hit and tree_bytes(self.root) - self.start > self.limit:
            self.hit = True
        return self.hit
