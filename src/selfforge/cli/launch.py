"""The ``selfforge`` command's entry point: hand the command line to a resident selfforge
when one runs (its imports already loaded: a command starts in tens of milliseconds, not
the ~0.4 s that Typer, Rich, pydantic and the judge take to import), else run it here.

Only the interpreter's own C modules (``_socket``, ``_signal``, ``_struct``) and
``json`` are imported before the decision (and ``judge/sandbox/residents.py``, which imports
``os``): ``socket`` and ``signal`` would import ``enum`` and ``selectors``, 10 ms of
every command. The hand-over is refused, and the command runs here as if no resident
existed, whenever anything does not match: no socket, a socket or folder not owned by
this user or open to others, another interpreter or import path, selfforge's files
changed since the resident loaded them (it then restarts itself),
``SELFFORGE_RESIDENT=0``, or the ``resident`` command itself. See
``selfforge/cli/resident.py`` for the other side.

Started on first use: when a short command (``check``, ``log``, ``show``, …; see
``QUICK``) ran here for want of a resident, one is started in the background once the
command is done and its output flushed, so the next command is handed over. Not where
``CI`` is set (a one-shot job pays the resident's imports and never uses it), not with
``SELFFORGE_RESIDENT=1`` (use one that runs, never start one) or ``=0`` (never use one);
``SELFFORGE_RESIDENT=auto`` starts one on CI too. It stops after 30 minutes with no
command, like ``selfforge resident start``'s.
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

from selfforge.judge.sandbox.residents import resident_dir  # os alone: the sandbox hides it

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)
DECISION_S = 30.0  # the resident says yes or no within milliseconds unless it is stuck
# The commands after which a resident is started on first use: quick, and run often (a
# hook's check, a look at the journal, a small measure compared: issue 42). Not `run`,
# `bench`, `demo`, `serve` or `mcp`: their start-up is nothing beside what they do; not
# `resident` itself.
QUICK = frozenset(
    ("check", "log", "show", "status", "apply-edits", "map", "index", "plan", "doctor", "measure")
)
AUTO_IDLE = "30m"


def interpreter() -> str:
    """The interpreter and environment: `python` and `python3` of one virtualenv agree."""
    return f"{os.path.realpath(sys.executable)}\0{sys.prefix}"


def socket_path() -> str:
    """One resident per interpreter and selfforge installation."""
    return _beside_socket("sock")


def lock_path() -> str:
    """Held by the resident that serves (or is starting to serve) ``socket_path()``."""
    return _beside_socket("lock")


def _beside_socket(suffix: str) -> str:
    key = zlib.crc32(f"{interpreter()}\0{PACKAGE_DIR}".encode())
    return os.path.join(resident_dir(), f"resident-{key:08x}.{suffix}")


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
            argv0=sys.argv[0] if sys.argv else "",  # as typed: hints repeat it (demo.py)
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


def starts_resident(argv: list[str], environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether a command that ran here starts a resident for the next (module docstring)."""
    mode = environ.get("SELFFORGE_RESIDENT", "")
    if mode not in ("", "auto") or (
        not mode and environ.get("CI", "").lower() not in ("", "0", "false")
    ):
        return False
    words = [w for w in argv if w != "--debug"]
    return bool(words) and words[0] in QUICK and not {"-h", "--help"} & set(words)


def start_resident() -> None:
    """Start ``selfforge resident serve`` in a session of its own, holding none of this
    command's descriptors (a caller reading this command's output to its end would
    otherwise wait for the resident). Quiet: nothing started is no error here."""
    folder = resident_dir()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not private(folder, stat.S_IFDIR):  # `selfforge resident start` says why
        return
    if _held(lock_path()):  # one is starting (still importing) or serving another way
        return
    log = _beside_socket("log")  # what `selfforge resident start` writes to
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    with _suppress_os_errors():
        inherited = [int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2]
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited if _inheritable(fd)]
    env = {**os.environ, "SELFFORGE_RESIDENT": "0"}
    argv = [sys.executable, "-m", "selfforge", "resident", "serve", "--idle", AUTO_IDLE]
    with _suppress_os_errors():
        os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)


def _held(path: str) -> bool:
    """Whether a resident holds the lock at ``path`` (``resident.claim``)."""
    import fcntl  # a C module: no cost worth counting

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return True  # nothing could claim it either: start nothing
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # released: the resident about to start claims it
    return False


class _suppress_os_errors:  # contextlib would be one more import for every command
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, value: object, trace: object) -> bool:
        return isinstance(value, (OSError, ValueError, NotImplementedError))


def _inheritable(fd: int) -> bool:
    try:
        return os.get_inheritable(fd)
    except OSError:  # closed since it was listed (the listing's own descriptor)
        return False


def main() -> None:
    argv = sys.argv[1:]
    # Shell completion finds the user's shell among this process's parents: never handed
    # to a resident, whose worker's parent is the resident.
    completion = any(a.startswith(("--show-completion", "--install-completion")) for a in argv)
    if (
        os.environ.get("SELFFORGE_RESIDENT", "auto") != "0"
        and argv[:1] != ["resident"]
        and not completion
    ):
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

    try:
        threading._shutdown()  # type: ignore[attr-defined]
    except KeyboardInterrupt:  # a second Ctrl-C while the threads are joined
        code = code or 130
    except Exception:
        # as the interpreter's own shutdown does, an exit hook's error changes no exit
        # code (a process pool's wake-up pipe whose other end a Ctrl-C closed first)
        pass
    atexit._run_exitfuncs()
    if starts_resident(argv, os.environ):
        _flush(sys.stdout, sys.stderr)  # the command's output first: a caller may be reading
        start_resident()
    _flush_and_exit(code)


def _exit_code(done: SystemExit) -> int:
    """What the interpreter would exit with for ``done``: a message is printed, code 1."""
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=sys.stderr)
    return 1


def _flush(*streams: object) -> None:
    for stream in streams:
        try:
            stream.flush()  # type: ignore[attr-defined]
        except (OSError, ValueError):  # a closed pipe: nothing more to say there
            continue


def _flush_and_exit(code: int) -> None:
    _flush(sys.stdout, sys.stderr)
    os._exit(code)


def ask(op: str) -> dict[str, object] | None:
    """Ping or stop this installation's resident; None when none answers."""
    sock = connect()
    if sock is None:
        return None
    try:
        send(sock, request(op), [])
        return read_line(sock, bytearray())
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def log_path() -> str:
    """Where the resident started by ``selfforge resident start`` writes its log."""
    return _beside_socket("log")
