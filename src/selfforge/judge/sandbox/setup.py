"""``[checks] setup``: install dependencies once per set of manifests, never from the
candidate, and show what it installed to every check read-only.

The command (``npm ci``, ``go mod download``, ``cargo fetch``, ``pip install -r ...``)
runs in the sandbox with the network allowed, in a checkout of the base commit's files
only, under ``setup/<key>/tree`` of the repository's trees folder (``selfforge.repo.trees``:
outside the checkout, hidden from every check). Package caches are pointed inside that
tree (``.selfforge-cache/``). What the command leaves there that git does not track
(``node_modules/``, ``vendor/``, the caches) is then bound read-only into each check's
tree at the same place, and the cache variables point at it. The key is the command and
the manifests and lockfiles of the base commit: a run reuses an install until they
change, and a candidate cannot change them (a dependency change, refused unless
``[safety] allow_dependency_changes``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from selfforge.errors import SelfforgeError
from selfforge.judge.sandbox.command import CheckSpace, run_command
from selfforge.repo import git

MANIFESTS = (
    "package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
    "go.mod", "go.sum", "go.work", "go.work.sum", "Cargo.toml", "Cargo.lock",
    "requirements.txt", "requirements-dev.txt", "pyproject.toml", "setup.cfg", "setup.py",
    "poetry.lock", "uv.lock", "Pipfile.lock",
)  # fmt: skip
CACHE = ".selfforge-cache"
# Where package managers keep what they download: inside the setup tree, then shown.
CACHE_ENV = {
    "npm_config_cache": f"{{tree}}/{CACHE}/npm",
    "GOMODCACHE": f"{{tree}}/{CACHE}/gomod",
    "GOFLAGS": "-modcacherw",
    "CARGO_HOME": f"{{tree}}/{CACHE}/cargo",
    "PIP_CACHE_DIR": f"{{tree}}/{CACHE}/pip",
}
SETUP_DISK_MB = 8192


class SetupError(SelfforgeError):
    """The setup command failed: nothing can be judged without its dependencies."""


def key(root: Path, commit: str, command: str) -> str:
    """The command and the base commit's manifests (their blob ids, wherever they are)."""
    listing = git.git("ls-tree", "-r", commit, cwd=root)
    blobs = sorted(
        line
        for line in listing.splitlines()
        if line.rsplit("\t", 1)[-1].split("/")[-1] in MANIFESTS
    )
    return hashlib.sha256("\n".join([command, *blobs]).encode()).hexdigest()[:16]


def provide(
    root: Path,
    trees_folder: Path,
    commit: str,
    command: str,
    space: CheckSpace,
    timeout_s: float,
    say: Callable[[str, float], None] = lambda text, secs: None,
) -> CheckSpace:
    """The check space with the installed dependencies shown; runs the setup when this
    key has none yet."""
    folder = trees_folder / "setup" / key(root, commit, command)
    done = folder / "done.json"
    if not done.is_file():
        _install(root, folder, commit, command, space, timeout_s, say)
    else:
        say(f"setup: reused ({folder.name}, the manifests are unchanged)", 0.0)
    record = json.loads(done.read_text())
    provided = tuple((str(folder / "tree" / rel), rel) for rel in record["products"])
    # The caches, where the setup left one (shown read-only); never a path that is not
    # there, which a tool would create in the check's tree. npm's logs go to the
    # sandbox's private /tmp, not into the tree.
    cached = CACHE in record["products"]
    caches = [(k, v) for k, v in CACHE_ENV.items() if cached and k != "GOFLAGS"]
    env = (*caches, ("npm_config_logs_dir", "/tmp/.npm-logs"))
    return dataclasses.replace(space, provided=provided, provided_env=env)


def _install(
    root: Path,
    folder: Path,
    commit: str,
    command: str,
    space: CheckSpace,
    timeout_s: float,
    say: Callable[[str, float], None],
) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    tree = folder / "tree"
    tree.mkdir(parents=True)
    _checkout(root, commit, tree, folder / "index")
    tracked = set(git.git("ls-tree", "--name-only", commit, cwd=root).splitlines())
    env = {k: v.replace("{tree}", str(tree)) for k, v in CACHE_ENV.items()}
    online = dataclasses.replace(
        space,
        network=True,
        disk_mb=max(space.disk_mb, SETUP_DISK_MB),
        provided=(),
        provided_env=(),
    )
    result = run_command(command, tree, timeout_s, online, extra_env=env, head=commit)
    if result.exit_code != 0:
        last = (result.output.strip().splitlines() or [""])[-1].strip()
        raise SetupError(
            f"the setup command `{command}` exited {result.exit_code} on the base commit "
            f"({last}); fix it or [checks] setup in selfforge.toml"
        )
    products = sorted(p.name for p in tree.iterdir() if p.name not in tracked)
    (folder / "done.json").write_text(json.dumps({"command": command, "products": products}))
    shown = ", ".join(products) or "nothing in the tree"
    say(f"setup: `{command}` installed {shown}", result.duration_s)


def _checkout(root: Path, commit: str, tree: Path, index: Path) -> None:
    """The commit's files in ``tree`` (no worktree registered, nothing of the user's
    index touched): a private index, then checkout-index into the folder."""
    env = {"GIT_INDEX_FILE": str(index)}
    git.git("read-tree", commit, cwd=root, env=env)
    git.git("checkout-index", "-a", f"--prefix={tree}/", cwd=root, env=env)
    index.unlink(missing_ok=True)
