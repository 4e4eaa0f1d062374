"""The ``selfforge`` command's entry point: hand the command line to a resident selfforge
when one runs (its imports already loaded: a command starts in tens of milliseconds, not
the ~0.4 s that Typer, Rich, pydantic and the judge take to import), else run it here.

Only the interpreter's own C modules (``_socket``, ``_signal``, ``_struct``) and
``json`` are imported before the decision (and ``judge/residents.py``, which imports
``os``): ``socket`` and ``signal`` would import ``enum`` and ``selectors``, 10 ms of
every command. The hand-over is refused, and the command runs here as if no resident
existed, whenever anything does not match: no socket, a socket or folder not owned by
this user or open to others, another interpreter or import path, selfforge's files
changed since the resident loaded them (it then restarts itself),
``SELFFORGE_RESIDENT=0``, or the ``resident`` command itself. See
``selfforge/cli/resident.py`` for the other side.
"""

from __future__ import annotations

import _signal
import _socket
import _struct
import json
import os
import stat  # already loaded: os imports it
import sys
import zlib

from selfforge.judge.residents import resident_dir  # os alone: the sandbox hides it

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)
DECISION_S = 30.0  # the resident says yes or no within milliseconds unless it is stuck


def interpreter() -> str:
    """The interpreter and environment: `python` and `python3` of one virtualenv agree."""
    return f"{os.path.realpath(sys.executable)}\0{sys.prefix}"


def socket_path() -> str:
    """One resident per interpreter and selfforge installation."""
    key = zlib.crc32(f"{interpreter()}\0{PACKAGE_DIR}".encode())
    return os.path.join(resident_dir(), f"resident-{key:08x}.sock")


def private(path: str, kind: int) -> bool:
    """``path`` is of ``kind``, owned by this user and open to no one else."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_IFMT(info.st_mode) == kind
        and info.st_uid == os.getuid()
        and not info.st_mode & 0o077
    )


def import_path() -> list[str]:
    """``sys.path`` without its first entry (the script's folder or the working directory,
    which differ between two starts of the same installation)."""
    return sys.path[1:]


def program_name() -> str:
    """What usage lines call the command: `selfforge`, or `python -m selfforge`."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name in ("selfforge", "selfforge.__main__"):
        return f"{os.path.basename(sys.executable)} -m selfforge"
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "selfforge"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def request(kind: str, **extra: object) -> dict[str, object]:
    return {"op": kind, "python": interpreter(), "path": import_path(), **extra}


def send(sock: _socket.socket, message: dict[str, object], fds: list[int]) -> None:
    """A length, the descriptors ``fds`` beside it (SCM_RIGHTS), then the JSON body."""
    body = json.dumps(message).encode()
    rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _struct.pack(f"{len(fds)}i", *fds))]
    sock.sendmsg([_struct.pack("!I", len(body))], rights if fds else [])
    sock.sendall(body)


def connect(timeout: float | None = 2.0) -> _socket.socket | None:
    """A connection to this installation's resident, or None when there is none to trust."""
    path = socket_path()
    if not private(os.path.dirname(path), stat.S_IFDIR) or not private(path, stat.S_IFSOCK):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def read_line(sock: _socket.socket, buffer: bytearray) -> dict[str, object] | None:
    while b"\n" not in buffer:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line)


def hand_over(argv: list[str]) -> int | None:
    """Run ``argv`` in the resident; its exit code, or None to run it here instead."""
    sock = connect()
    if sock is None:
        return None
    buffer = bytearray()
    try:
        message = request(
            "run",
            argv=argv,
            cwd=os.getcwd(),
            env=dict(os.environ),
            umask=_umask(),
            first_path=sys.path[0] if sys.path else "",
            prog=program_name(),
            encoding=[sys.stdout.encoding, sys.stdout.errors, sys.stdin.encoding],
        )
        send(sock, message, [0, 1, 2])
        sock.settimeout(DECISION_S)
        answer = read_line(sock, buffer)
    except TimeoutError:
        # No yes or no: the resident may still start the command, so it must not run
        # here as well.
        sys.stderr.write(
            f"error: the resident selfforge did not answer within {DECISION_S:g} s "
            "(`selfforge resident stop` stops it; SELFFORGE_RESIDENT=0 runs without it)\n"
        )
        return 1
    except (OSError, ValueError):  # refused or gone before saying yes: nothing started
        sock.close()
        return None
    if not answer or not answer.get("ok"):
        sock.close()
        return None
    sock.settimeout(None)

    def forward(signum: int, _frame: object) -> None:
        try:
            sock.sendall(bytes([signum]))
        except OSError:  # the worker is gone: its exit code (or its absence) says so
            return

    for signum in FORWARDED:
        _signal.signal(signum, forward)
    while True:
        try:  # a forwarded signal interrupts recv, which Python retries (PEP 475)
            done = read_line(sock, buffer)
        except (OSError, ValueError):
            done = None
        if done is None:
            print(
                "error: the resident selfforge's worker ended without an exit code "
                "(`selfforge resident stop` stops the resident; SELFFORGE_RESIDENT=0 "
                "runs without it)",
                file=sys.stderr,
            )
            return 1
        if "exit" in done:
            if done.get("error"):
                sys.stderr.write(f"error: {done['error']}\n")
            return int(done["exit"])  # type: ignore[call-overload]


def main() -> None:
    argv = sys.argv[1:]
    if os.environ.get("SELFFORGE_RESIDENT", "1") != "0" and argv[:1] != ["resident"]:
        code = hand_over(argv)
        if code is not None:
            # Nothing of this process's own is left to clean up (the worker ran the
            # command): skip the interpreter's shutdown, a few milliseconds per command.
            _flush_and_exit(code)
    from selfforge.cli.program import main as run_here

    try:
        run_here()
        code = 0
    except SystemExit as done:
        code = _exit_code(done)
    # The command has closed what it opened (the journal, the lock, its worktrees); what
    # is left is the interpreter's teardown of every module and object it loaded, ~0.1 s
    # of a warm check (measured on a Go check: 0.09 s from the last line to the exit).
    # What a normal exit does first is done as it does it (threading's shutdown: the
    # executors' exit hooks, then every thread that is not a daemon joined; then the
    # exit handlers); then the process ends without the teardown.
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    _flush_and_exit(code)


def _exit_code(done: SystemExit) -> int:
    """What the interpreter would exit with for ``done``: a message is printed, code 1."""
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=sys.stderr)
    return 1


def _flush_and_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say there
            continue
    os._exit(code)
