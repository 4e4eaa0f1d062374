"""A resident selfforge: one process that has imported selfforge (Typer, Rich, pydantic,
the judge, the providers) and forks a worker for each ``selfforge`` command, so a command
starts in tens of milliseconds instead of ~0.4 s. Started with ``selfforge resident
start``; ``selfforge/cli/launch.py`` is the command's side.

What a worker gets is what the command would have had: the caller's standard input,
output and error (passed as descriptors), environment, working directory, umask and
arguments. Signals the caller receives (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) are forwarded;
a caller that goes away interrupts its worker like Ctrl-C. The exit code goes back.

Trust: the socket lives in a folder private to the user (0700, checked by both sides),
and the resident serves only its own user (SO_PEERCRED). It refuses to serve, and the
command runs on its own, for another interpreter or import path. Before each fork it
checks that none of selfforge's files (nor the installed packages) changed since it
loaded them; if any did it restarts itself, so a worker never runs stale code: which
matters most when selfforge improves its own source.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import importlib
import json
import os
import pkgutil
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Iterator

from selfforge.cli import launch
from selfforge.errors import SelfforgeError
from selfforge.ui.consoles import remake_consoles

# Never preloaded: the pytest plugin reads (and removes) its settings from the
# environment at import; the optional extras are heavy and rarely used; __main__ runs.
NOT_PRELOADED = (
    "selfforge.__main__",
    "selfforge.judge.runners.inject",
    "selfforge.web",
    "selfforge.cli.mcp_server",
    "ray",
)


def preload() -> object:
    """Import selfforge's modules and convert the whole CLI (Typer's per-option adapters
    are a third of its cost): the click command every worker runs."""
    import typer.main

    from selfforge.cli import program as cli

    for module in pkgutil.walk_packages([launch.PACKAGE_DIR], "selfforge."):
        if any(part in module.name for part in NOT_PRELOADED):
            continue
        with contextlib.suppress(Exception):  # an extra not installed: imported if used
            importlib.import_module(module.name)
    command = typer.main.get_command(cli.build_app())
    warm()
    return command


def warm() -> None:
    """Fill the caches every command fills on first use that hold no repository's state:
    the prompt templates compiled and the default gates' glob patterns (together ~15 ms
    of each judged change, paid here once). What depends on the machine or a repository
    (the sandbox probe, a home folder's credentials) is never kept across commands."""
    from selfforge.config import ALWAYS_PROTECTED, DEFAULT_PROTECTED
    from selfforge.judge import baseline as judge_baseline
    from selfforge.judge.rules import integrity_lang
    from selfforge.repo import protected
    from selfforge.roles import caller as roles

    for name in roles.template_names():
        roles.compiled(name)
    protected.matching_glob("warm", [*DEFAULT_PROTECTED, *ALWAYS_PROTECTED])
    integrity_lang.warm()
    judge_baseline._judge_code()


def _watched() -> Iterator[str]:
    """selfforge's files and folders, and the folders packages are installed in."""
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and (name == "selfforge" or name.startswith("selfforge.")):
            yield path
    for folder, dirs, _files in os.walk(launch.PACKAGE_DIR):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # compiled files come and go
        yield folder
    for entry in launch.import_path():  # not the first: the folder the resident started in
        if entry and os.path.isdir(entry):
            yield entry


Seen = tuple[int, int] | tuple[str, ...]


def _seen(path: str) -> Seen:
    """A file's (mtime, size); a folder's entries (a module added or removed, a package
    installed), not its mtime, which Python's first __pycache__ there also changes."""
    try:
        if os.path.isdir(path):
            return tuple(sorted(e for e in os.listdir(path) if e != "__pycache__"))
        info = os.stat(path)
    except OSError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)


def stamp(paths: Iterable[str] | None = None) -> dict[str, Seen]:
    """What each watched path looks like now (of ``paths``: the same ones again)."""
    return {path: _seen(path) for path in (_watched() if paths is None else paths)}


def _receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    # Close-on-exec: a restart (exec) must not keep the caller's streams open.
    head, fds, _flags, _addr = socket.recv_fds(conn, 4, 3, socket.MSG_CMSG_CLOEXEC)
    while len(head) < 4:
        more = conn.recv(4 - len(head))
        if not more:
            raise ConnectionError("closed")
        head += more
    (size,) = struct.unpack("!I", head)
    if size > 16 * 1024 * 1024:
        raise ConnectionError("request too large")
    body = bytearray()
    while len(body) < size:
        more = conn.recv(min(65536, size - len(body)))
        if not more:
            raise ConnectionError("closed")
        body += more
    return json.loads(body), fds


def _reply(conn: socket.socket, message: dict[str, object]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(message).encode() + b"\n")


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def prepare_folder(folder: str) -> None:
    """Make the socket folder, private; refuse one that someone else owns or can enter."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise SelfforgeError(f"cannot make {folder} for the resident's socket: {exc}") from None
    if not launch.private(folder, launch.stat.S_IFDIR):
        raise SelfforgeError(
            f"{folder} is not private to this user (it must be owned by uid {os.getuid()}, "
            "mode 0700): remove it, or set SELFFORGE_RESIDENT_DIR to a folder that is"
        )


class Resident:
    def __init__(self, idle_s: float | None) -> None:
        self.idle_s = idle_s
        self.path = launch.socket_path()
        self.started = time.time()
        self.served = 0
        self.command = preload()
        self.stamp = stamp()
        self.import_path = launch.import_path()
        # What is loaded now is shared with every worker, copy-on-write: the collector
        # must not walk it in the worker (each page it touches would be copied).
        gc.collect()
        gc.freeze()

    def serve(self) -> None:
        prepare_folder(os.path.dirname(self.path))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        mine = os.stat(self.path).st_ino  # a later resident may have bound the path since
        listener.listen(16)
        listener.settimeout(self.idle_s)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            self._loop(listener)
        finally:
            listener.close()
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == mine:
                    os.unlink(self.path)

    def _loop(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                return  # idle long enough
            with conn:
                stop = self._handle(listener, conn)
            if stop:
                return

    def _handle(self, listener: socket.socket, conn: socket.socket) -> bool:
        conn.settimeout(5)
        fds: list[int] = []
        try:
            if _peer_uid(conn) != os.getuid():
                return False
            message, fds = _receive(conn)
            op = message.get("op")
            mine = (launch.interpreter(), self.import_path)
            if (message.get("python"), message.get("path")) != mine:
                _reply(conn, {"ok": False, "why": "another interpreter or import path"})
                return False
            if op == "ping":
                _reply(conn, self.status())
                return False
            if op == "stop":
                _reply(conn, {"ok": True, "stopping": True})
                return True
            if op != "run":
                _reply(conn, {"ok": False, "why": f"unknown request {op!r}"})
                return False
            if (changed := self.changed()) is not None:
                _reply(conn, {"ok": False, "why": f"selfforge changed ({changed}): restarting"})
                print(f"{time.ctime()}: {changed} changed: restarting", file=sys.stderr, flush=True)
                for fd in fds:
                    os.close(fd)
                conn.close()
                self._restart(listener)
            if len(fds) != 3:
                _reply(conn, {"ok": False, "why": "no standard streams passed"})
                return False
            # Yes before the fork: from here the caller waits for an exit code and never
            # runs the command itself (it would run twice).
            _reply(conn, {"ok": True})
            self.served += 1
            try:
                child = os.fork()
            except OSError as exc:
                _reply(conn, {"exit": 1, "error": f"the resident could not fork a worker: {exc}"})
                return False
            if child == 0:
                listener.close()
                _worker(conn, message, fds, self.command)  # never returns
        except (OSError, ValueError, ConnectionError):
            return False
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return False

    def changed(self) -> str | None:
        """The first watched file that changed since the resident loaded, if any."""
        now = stamp(self.stamp)
        return next((path for path, seen in self.stamp.items() if now.get(path) != seen), None)

    def _restart(self, listener: socket.socket) -> None:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        idle = f"{self.idle_s}s" if self.idle_s else "0"
        argv = [sys.executable, "-m", "selfforge", "resident", "serve", "--idle", idle]
        os.execv(sys.executable, argv)

    def status(self) -> dict[str, object]:
        return {
            "ok": True,
            "pid": os.getpid(),
            "socket": self.path,
            "started": self.started,
            "served": self.served,
            "idle_s": self.idle_s,
        }


def _streams(encoding: list[str | None]) -> None:
    out_enc, out_errors, in_enc = [*encoding, None, None, None][:3]
    sys.stdin = open(0, encoding=in_enc, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=out_enc, errors=out_errors, closefd=False)  # noqa: SIM115
    sys.stdout.reconfigure(line_buffering=os.isatty(1))
    sys.stderr = open(2, "w", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115


def _worker(
    conn: socket.socket, message: dict[str, object], fds: list[int], command: object
) -> None:
    """The forked worker: become the caller's command, run it, send the exit code."""
    code = 1
    finished = threading.Event()
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        fds.clear()
        env = message["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(str(message["cwd"]))
        os.umask(int(message.get("umask", 0o022)))  # type: ignore[call-overload]
        sys.path[0:1] = [str(message.get("first_path", ""))]
        argv = message["argv"]
        assert isinstance(argv, list)
        sys.argv = [str(message.get("argv0") or "selfforge"), *map(str, argv)]
        _streams(message.get("encoding") or [])  # type: ignore[arg-type]
        remake_consoles()  # Rich settled colours and width for the resident, at import
        conn.settimeout(None)
        threading.Thread(target=_signals, args=(conn, finished), daemon=True).start()
        code = _run(command, str(message.get("prog") or "selfforge"))
    except BaseException:  # the worker must always answer, whatever happened
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        finished.set()
        with contextlib.suppress(Exception):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        _reply(conn, {"exit": code})
        os._exit(code)


def _run(command: object, prog: str) -> int:
    from selfforge.cli import program as cli

    try:
        cli.main(command=functools.partial(command, prog_name=prog))  # type: ignore[call-overload]
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 1
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except KeyboardInterrupt:
        return 130
    finally:
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
    return 0


def _signals(conn: socket.socket, finished: threading.Event) -> None:
    """Signals the caller forwards, one byte each; the caller gone is a Ctrl-C."""
    while True:
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if finished.is_set():
            return
        if not data:
            os.kill(os.getpid(), signal.SIGINT)
            return
        for signum in data:
            os.kill(os.getpid(), signum)


def claim() -> int | None:
    """The lock of this installation's resident, held from here until the process ends
    or restarts itself (the exec closes it; the new code claims it again); None when
    another resident holds it: it serves, or is starting to (two commands that each
    started one at once)."""
    import fcntl

    prepare_folder(launch.resident_dir())
    fd = os.open(launch.lock_path(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
