"""What candidate code may touch, as data, and the one function that turns it into bwrap.

Every command that runs candidate code (checks, the smoke run of a self-change) runs in a
bubblewrap sandbox: the whole filesystem read-only; the user's home, checkout, ``.git``,
``.selfforge/``, selfforge's copies of the code (``trees.py``) and selfforge's keys
hidden behind empty tmpfs mounts; only the candidate's tree (bound after them) and a
private, size-limited ``/tmp`` writable; no network; a new pid namespace that dies with
the check. There is no fail-open path: when bubblewrap cannot
run, ``require`` raises and nothing runs, unless the user chose ``mode = "off"``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.errors import SelfforgeError

# Variables a check may see; everything else (keys, tokens, agent sockets, cloud
# credentials, the user's PYTHONPATH and VIRTUAL_ENV) stays out.
ENV_ALLOWLIST = (
    *("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "COLUMNS", "LINES", "NO_COLOR"),
    # the user's choice to load only the pytest plugins they name (PYTEST_PLUGINS stays
    # out: it names modules to import)
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
)
ENV_PREFIX_ALLOWLIST = ("LC_",)
INSIDE_HOME = "/tmp/home"
FIX_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap) and make sure user namespaces are enabled "
    '(sysctl kernel.unprivileged_userns_clone=1), or opt out with [sandbox] mode = "off" '
    "in selfforge.toml or --no-sandbox (candidate code then runs with your rights)"
)


class SandboxUnavailable(SelfforgeError):
    """bubblewrap is missing or cannot create namespaces here."""


@dataclass(frozen=True)
class Bind:
    source: Path
    dest: Path
    writable: bool = False


@dataclass(frozen=True)
class Policy:
    """What one sandboxed command may see and touch."""

    writable: tuple[Path, ...]  # the candidate's tree (bound at the same path)
    hidden: tuple[Path, ...] = ()  # replaced by empty tmpfs: home, checkout, .git, state
    readable: tuple[Path, ...] = ()  # shown again, read-only, inside a hidden place
    binds: tuple[Bind, ...] = ()  # extra mounts: the judge's channel, a throwaway git dir
    network: bool = False
    tmp_mb: int = 1024
    env: Mapping[str, str] = field(default_factory=dict)
    masked: tuple[Path, ...] = ()  # credentials inside a readable place: shown empty


# Places every check gets a fresh, empty one of (a tmpfs each), /tmp first.
PRIVATE = ("/tmp", "/dev/shm", "/run", "/var/tmp")


def _exists(path: Path) -> bool:
    """Whether ``path`` is there for this user: a place they may not even look into (an
    other user's private folder named by an inherited variable) is out of their reach
    already, nothing to hide or show."""
    try:
        return path.exists()
    except OSError:
        return False


def bwrap_argv(policy: Policy, argv: list[str], cwd: Path) -> list[str]:
    """The bubblewrap command line that runs ``argv`` in ``cwd`` under ``policy``."""
    args = [bwrap_exe() or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--size", str(policy.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    for private in PRIVATE[1:]:  # as small as /tmp: no disk of yours
        if os.path.isdir(private):
            args += ["--size", str(policy.tmp_mb * 1024 * 1024), "--tmpfs", private]
    for path in _outermost(policy.hidden):
        if _exists(path) and not _under(path, Path("/tmp")):
            args += ["--tmpfs", str(path)]
    for path in sorted(set(policy.readable), key=lambda p: len(p.parts)):
        # What the check must read inside a place made private (a venv or toolchain in
        # /var/tmp, a checkout's interpreter under /tmp) is shown again, read-only.
        covered = (*policy.hidden, *map(Path, PRIVATE))
        if _exists(path) and any(_under(path, h) for h in covered):
            args += ["--ro-bind", str(path), str(path)]
    for path in policy.masked:  # after the readable binds they sit in
        if path.is_dir() and not path.is_symlink():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    for path in sorted(set(policy.writable), key=lambda p: len(p.parts)):
        args += ["--bind", str(path), str(path)]
    for bind in policy.binds:
        args += ["--bind" if bind.writable else "--ro-bind", str(bind.source), str(bind.dest)]
    args += ["--dir", INSIDE_HOME, "--chdir", str(cwd)]
    args += ["--unshare-all", "--die-with-parent", "--new-session", *unprivileged()]
    if policy.network:
        args.append("--share-net")
    return [*args, "--", *argv]


INSIDE_UID = 1000  # who a check runs as when selfforge runs as root


def unprivileged() -> list[str]:
    """No privilege inside, whoever runs selfforge: a user namespace of its own, every
    capability dropped, and (where bubblewrap can) no way to make another namespace to
    regain one. Run as root, bubblewrap otherwise keeps every capability, and a check
    could unmount what hides the host or remount ``/`` read-write."""
    args = ["--unshare-user", "--cap-drop", "ALL"]
    if os.geteuid() == 0:
        args += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID)]
    if _can_disable_userns():
        args.append("--disable-userns")
    return args


@functools.cache
def _can_disable_userns() -> bool:
    exe = bwrap_exe()
    if exe is None:
        return False
    shown = subprocess.run([exe, "--help"], capture_output=True, text=True)
    return "--disable-userns" in shown.stdout + shown.stderr


def check_env(extra_names: Iterable[str] = (), source: Mapping[str, str] | None = None) -> dict:
    """The environment of a sandboxed check: the allowlist, plus names the user listed."""
    from selfforge.models.secrets import is_secret_name

    source = os.environ if source is None else source
    names = set(ENV_ALLOWLIST) | {n for n in extra_names if not is_secret_name(n)}
    env = {
        k: v
        for k, v in source.items()
        if k in names or (k.startswith(ENV_PREFIX_ALLOWLIST) and not is_secret_name(k))
    }
    env.setdefault("PATH", os.defpath)
    env.update({"HOME": INSIDE_HOME, "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
    env[MARKER] = "1"
    return env


MARKER = "SELFFORGE_SANDBOXED"


def inside() -> bool:
    """This process already runs in a selfforge sandbox (bubblewrap is its pid 1).

    Namespaces do not nest here, and need not: a selfforge started by a sandboxed check
    (selfforge's own tests, the smoke run of a self-change) runs its checks in the same,
    already confined, sandbox. Outside one, pid 1 is never bwrap, whatever the
    environment says, so the marker alone cannot switch the sandbox off.
    """
    if os.environ.get(MARKER) != "1":
        return False
    try:
        return Path("/proc/1/comm").read_text().strip() == "bwrap"
    except OSError:
        return False


def hidden_places(repo: Path, git_common_dir: Path | None = None) -> tuple[Path, ...]:
    """The user's home, checkout, git directory, selfforge's own config, the resident
    selfforge's socket folder (a check that reached it would run selfforge unsandboxed)
    and every repository's copies of the code (``trees.py``: a check's own tree is bound
    over it; never another repository's, nor the base's kept tree): never seen."""
    from selfforge.judge.sandbox.residents import resident_dir
    from selfforge.models.secrets import user_config_dir
    from selfforge.repo import trees

    places = [Path.home(), repo, user_config_dir(), Path(resident_dir()), trees.root_path()]
    if git_common_dir is not None:
        places.append(git_common_dir)
    return tuple(p.resolve() for p in places)


def runtime_roots(
    executables: Iterable[Path] = (), protect: Iterable[Path] = ()
) -> tuple[Path, ...]:
    """Toolchains a check needs even where they live in a hidden place (read-only).

    The interpreters this process and the check commands use, their virtualenvs and base
    installations, and each PATH entry under the home directory: by the exact folder or
    the installation it belongs to (``home.installation``), never the top folder of home
    that holds it; a venv that is a link, at its own path and its target's. Nothing that
    contains a ``protect``ed place (the checkout, its .git, selfforge's config) or home
    itself is ever shown: a toolchain inside the checkout is shown on its own.
    """
    from selfforge.judge.sandbox import home as homes

    home = Path.home().resolve()
    protect = [p.resolve() for p in protect]
    roots: set[Path] = set()
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix}:
        roots |= homes.python_prefix(Path(prefix).resolve(), home)
    for exe in executables:
        roots |= homes.executable_roots(exe, home)
    for entry in homes.path_entries(home):
        shown = homes.installation(entry, home)
        roots |= {entry} if any(_under(p, r) for p in protect for r in shown) else shown
    safe = {r.resolve() for r in roots if os.path.exists(r)}  # False where not searchable
    # A venv that is a link out of the checkout (.venv -> ~/venvs/x): its target is shown,
    # and so is the link's own path, where the check's command names it
    safe |= {r.absolute() for r in roots if os.path.islink(r) and os.path.exists(r)}
    return tuple(sorted(r for r in safe if not any(_under(p, r) for p in (*protect, home))))


# What a shown home folder may hold that is a credential, never a toolchain's need.
CREDENTIAL_NAMES = {
    ".netrc", ".pypirc", ".npmrc", ".git-credentials", ".docker", ".aws", ".azure", ".kube",
    ".ssh", ".gnupg", "gcloud", "keyrings", "python_keyring", "hub", "gh",
}  # fmt: skip
CREDENTIAL_PATTERNS = ("credentials*", "*.token", "*token.json", "*.pem", "*.key", "id_rsa*",
                       "id_ed25519*", "id_ecdsa*", "auth.json")  # fmt: skip
# Package caches and installed code: never walked (a folder of them is shown as a whole
# for a runner's cache: cargo's registry, Go's module cache, rustup's toolchains).
_SKIP = {"registry", "git", "toolchains", "node_modules", "pkg", "mod", "site-packages", "lib",
         "share"}  # fmt: skip
_CREDENTIAL = re.compile("|".join(fnmatch.translate(p) for p in CREDENTIAL_PATTERNS))


def credentials_in(roots: tuple[Path, ...], depth: int = 4) -> tuple[Path, ...]:
    """Credential files and folders inside the home folders a check is shown (toolchains
    under ``~``): each is masked by the sandbox and its text remembered by the scrubber.
    Looked for once per process and set of roots; a caller waits for a search already
    under way (``policy.policy_ahead`` starts one while the run sets up)."""
    with _CREDENTIALS_LOCK:
        return _credentials_in(roots, depth)


_CREDENTIALS_LOCK = threading.Lock()


@functools.lru_cache(maxsize=16)
def _credentials_in(roots: tuple[Path, ...], depth: int) -> tuple[Path, ...]:
    from selfforge.models.secrets import remember_file

    home = Path.home().resolve()
    found: list[Path] = []
    for root in roots:
        if root == home or not _under(root, home) or root.name in _SKIP:
            continue
        stack = [(root, 0)]
        while stack:
            folder, level = stack.pop()
            try:  # scandir: the entry types come with the listing, no stat per entry
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name in CREDENTIAL_NAMES or _CREDENTIAL.match(entry.name):
                    found.append(folder / entry.name)
                elif level < depth and entry.name not in _SKIP:
                    with contextlib.suppress(OSError):
                        if entry.is_dir(follow_symlinks=False):  # a folder, not a link to one
                            stack.append((folder / entry.name, level + 1))
    for path in found:
        if path.is_file():
            remember_file(path)
    return tuple(found)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    ordered = sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in ordered:
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    return kept


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


# --- is it usable here? -----------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str  # the bwrap version, or why it cannot run
    capabilities: str = ""  # CapEff inside the sandbox, as /proc/self/status shows it


def bwrap_exe() -> str | None:
    """bubblewrap's path: ``SELFFORGE_BWRAP`` if set (a build of your own), else PATH's."""
    chosen = os.environ.get("SELFFORGE_BWRAP")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    return shutil.which("bwrap")


def probe() -> Probe:
    """Can bubblewrap create the namespaces a check needs, on this machine, now? Asked
    once per process; a caller waits for an answer already on its way (``probe_ahead``)."""
    with _PROBE_LOCK:
        return _probe()


def probe_ahead() -> None:
    """Start the probe in a thread: the run sets up meanwhile, ``require`` waits for it."""
    threading.Thread(target=probe, name="selfforge-probe", daemon=True).start()


_PROBE_LOCK = threading.Lock()


@functools.cache
def _probe() -> Probe:
    exe = bwrap_exe()
    if exe is None:
        return Probe(False, "bubblewrap (bwrap) is not installed")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    trial = bwrap_argv(Policy(writable=()), ["cat", "/proc/self/status"], Path("/"))
    proc = subprocess.run(trial, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return Probe(False, f"bubblewrap cannot create a sandbox here: {why}")
    caps = {
        key: value.strip()
        for key, _, value in (line.partition(":") for line in proc.stdout.splitlines())
        if key in ("CapEff", "CapPrm", "CapBnd")
    }
    held = {k: v for k, v in caps.items() if v.strip("0")}
    if held or not caps:
        shown = ", ".join(f"{k} {v}" for k, v in (held or {"CapEff": "unknown"}).items())
        return Probe(
            False,
            f"a check would keep capabilities inside bubblewrap's sandbox ({shown}); "
            "selfforge runs no candidate code with privilege",
        )
    return Probe(True, version or "bwrap", caps.get("CapEff", ""))


def require() -> None:
    """Refuse to run candidate code without a working sandbox (no silent downgrade)."""
    if inside():
        return
    found = probe()
    if not found.ok:
        raise SandboxUnavailable(f"cannot run candidate code safely: {found.detail}; {FIX_HINT}")
