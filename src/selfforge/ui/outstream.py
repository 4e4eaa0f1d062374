"""A standard output that a closed reader cannot stop: ``selfforge run ... | head``.

When the reader goes away (``head`` has its lines, ``less`` quit), writes fail with
EPIPE. The run must not care: what it would have printed is dropped, the run finishes
and the journal is complete. Only the printing stops.
"""

from __future__ import annotations

import contextlib
import os
from typing import IO, Any


class ClosedReaderSafe:
    """Wraps a text stream; after the first broken pipe every write is dropped."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.reader_gone = True
        # What is still buffered would fail again at exit ("Exception ignored ... Broken
        # pipe"): point the descriptor at /dev/null so the interpreter's last flush works.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding...: the stream's
        return getattr(self._stream, name)
