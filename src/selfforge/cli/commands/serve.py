"""serve: the read-only web dashboard over the journal."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
from pathlib import Path

import typer
from rich.markup import escape

from selfforge.errors import SelfforgeError, UsageError
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command()(serve)


def serve(
    repo: Path = typer.Option(Path("."), "--repo", help="The git repository (default: here)."),
    host: str = typer.Option(
        "127.0.0.1", help="Address to bind; any but loopback needs a token (made if not given)."
    ),
    port: int = typer.Option(8765, min=0, max=65535, help="Port (0: any free port)."),
    token: str = typer.Option(
        None, help="Require this token (?token=… once, then a cookie) on every request."
    ),
    open_browser: bool = typer.Option(False, "--open", help="Open the dashboard in a browser."),
) -> None:
    """A local, read-only web dashboard over the journal: runs, attempts, diffs, plots;
    live while a run goes on."""
    try:
        import uvicorn

        from selfforge.web.app import create_app
    except ImportError:
        from selfforge.web import INSTALL_HINT

        raise SelfforgeError(INSTALL_HINT) from None
    from selfforge.repo.workspace import Workspace

    journal = Workspace(repo).state / "journal.db"
    loopback = is_loopback(host)
    if not loopback and not token:
        token = secrets.token_urlsafe(18)
    app = create_app(journal, token=token, loopback=loopback)
    sock = _bind(host, port)
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{sock.getsockname()[1]}/" + (f"?token={token}" if token else "")
    console.print(f"selfforge dashboard on [bold]{escape(url)}[/]  (read-only; Ctrl-C stops)")
    console.print(f"  journal: {journal}")
    if not loopback:
        console.print(
            "  [yellow]reachable from other machines[/]: anyone with the URL above can read "
            "the journal (prompts, diffs); the token is all that guards it"
        )
    if open_browser:
        import webbrowser

        threading.Timer(0.5, webbrowser.open, (url,)).start()
    config = uvicorn.Config(
        app, log_level="warning", timeout_graceful_shutdown=1, lifespan="off", access_log=False
    )
    uvicorn.Server(config).run(sockets=[sock])


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so the printed URL has the real port and a taken port is a
    one-line error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port or --host"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
