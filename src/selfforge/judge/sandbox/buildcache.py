"""Build caches kept per repository: Go's GOCACHE and cargo's target dir, so a check
compiles only what its change touched, not every package and dependency in a fresh
cache.

They live under the repository's git dir (``<git-common-dir>/selfforge/cache/``), where
no test runner, linter or IDE walks. Only trusted runs write them: the baseline's checks
of the unmodified commit and a measure's runs on the base side of a comparison
(``CheckSpace.trusted``). A candidate's check sees them through
a copy that cannot write back, so no candidate can poison what later checks (of other
candidates, or the baseline) read:

- Go: the trusted cache is bound read-only inside the sandbox, and GOCACHE is a fresh
  folder in the sandbox's private /tmp that holds a symbolic link per cached file (go's
  cache is content-addressed: new entries are new files there; a write through a link
  meets a read-only mount). Cheap: one link per file, no data copied.
- cargo: cargo and the linker rewrite outputs in place, so a link would not do; the
  candidate gets a real copy of the target dir (``cp --reflink=auto``: shared blocks
  where the filesystem can), removed after the check.

bubblewrap 0.8 (Debian 12) has no overlay mounts (``--overlay-src`` came later), hence
the copies. Without a sandbox (``mode = "off"``) or inside one already, no cache is
shared: a candidate runs with the user's rights there and could write anything.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.judge.runners import gotest
from selfforge.judge.sandbox import bwrap as sandbox

if TYPE_CHECKING:
    from selfforge.judge.sandbox.check_space import CheckSpace

CACHE_INSIDE = "/tmp/.selfforge-cache"  # what the check's variables point at
TRUSTED_INSIDE = "/tmp/.selfforge-trusted"  # the trusted caches, read-only, for the links
GO_BUILD = "go-build"
CARGO_TARGET = "cargo-target"
_CARGO = re.compile(r"(^|[\s/;&|(])cargo\s")


@dataclass
class Caches:
    """What a check needs to use the repository's build caches."""

    env: dict[str, str] = field(default_factory=dict)
    binds: list[sandbox.Bind] = field(default_factory=list)
    prelude: str = ""  # shell run first inside the sandbox
    copies: list[Path] = field(default_factory=list)  # removed after the check

    def remove(self) -> None:
        for path in self.copies:
            shutil.rmtree(path, ignore_errors=True)


def trusted_dir(common: Path, name: str) -> Path:
    return common / "selfforge" / "cache" / name


def for_check(space: CheckSpace, tree: Path, command: str, scratch: Path | None) -> Caches:
    """The caches a check of ``command`` on ``tree`` uses: written by a trusted run, seen
    through a throwaway copy by any other. ``scratch``: where a copy may be made."""
    caches = Caches()
    common = space.git_common_dir
    if common is None or not space.sandboxed or sandbox.inside():
        return caches
    if (tree / "go.mod").is_file() or (tree / "go.work").is_file():
        _go(caches, trusted_dir(common, GO_BUILD), space.trusted)
    if (tree / "Cargo.toml").is_file() and _CARGO.search(f" {command}"):
        _cargo(caches, trusted_dir(common, CARGO_TARGET), space.trusted, scratch, tree)
    return caches


def _go(caches: Caches, trusted: Path, writer: bool) -> None:
    inside = f"{CACHE_INSIDE}/{GO_BUILD}"
    caches.env["GOCACHE"] = inside
    # The user's module cache, read-only, for every go command (go vet too, not only the
    # test runner's): without it a module with dependencies cannot load its packages, and
    # vet reports that alike on base and candidate, so no finding is ever new.
    if (modcache := gotest.module_cache()) is not None:
        caches.env["GOMODCACHE"] = str(modcache)
        caches.binds.append(sandbox.Bind(modcache, modcache))
    trusted.mkdir(parents=True, exist_ok=True)
    if writer:
        caches.binds.append(sandbox.Bind(trusted, Path(inside), writable=True))
        return
    seen = f"{TRUSTED_INSIDE}/{GO_BUILD}"
    caches.binds.append(sandbox.Bind(trusted, Path(seen)))
    # cp -s: a link per file (absolute targets), the folders made anew and writable
    caches.prelude += f"mkdir -p {CACHE_INSIDE} && cp -Rs {seen} {inside} 2>/dev/null; "


def _cargo(caches: Caches, trusted: Path, writer: bool, scratch: Path | None, tree: Path) -> None:
    inside = f"{CACHE_INSIDE}/{CARGO_TARGET}"
    caches.env["CARGO_TARGET_DIR"] = inside
    trusted.mkdir(parents=True, exist_ok=True)
    if writer:
        drop_own_libraries(trusted, tree)
        caches.binds.append(sandbox.Bind(trusted, Path(inside), writable=True))
        return
    copy = Path(tempfile.mkdtemp(prefix="selfforge-target-", dir=scratch)) / CARGO_TARGET
    caches.copies.append(copy.parent)
    done = subprocess.run(
        ["cp", "-a", "--reflink=auto", str(trusted), str(copy)], capture_output=True
    )
    if done.returncode != 0:  # never half a copy (a cut file cargo thinks fresh)
        shutil.rmtree(copy, ignore_errors=True)
        with contextlib.suppress(OSError):
            copy.mkdir()
    drop_own_libraries(copy, tree)
    caches.binds.append(sandbox.Bind(copy, Path(inside), writable=True))


def drop_own_libraries(target: Path, tree: Path) -> list[Path]:
    """Remove the project's own crates' libraries (``lib<name>-<hash>.rlib``/``.rmeta``
    in each profile's ``deps``) from a target dir a check is about to use; returns them.

    A target dir kept across commits holds one library per version of the crate (its
    hash changes with the version): after a release commit, both. Whatever then looks
    the crate up by name (``rustc -L target/debug/deps`` with ``extern crate NAME``, as
    autocfg's own tests do) finds two and fails (E0464), on the candidate only: a
    correct commit rejected. cargo builds a library it finds missing again, so only the
    crate itself is rebuilt; its dependencies stay cached."""
    removed = []
    for name in _own_crates(tree):
        for pattern in (f"lib{name}-*.rlib", f"lib{name}-*.rmeta"):
            for path in [*target.glob(f"*/deps/{pattern}"), *target.glob(f"*/*/deps/{pattern}")]:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


def _own_crates(tree: Path) -> set[str]:
    """The library names of the crates ``tree``'s Cargo.toml defines (its package and its
    workspace's members), as rustc names their files (``-`` made ``_``)."""
    top = _manifest(tree / "Cargo.toml")
    workspace = top.get("workspace")
    members = workspace.get("members", []) if isinstance(workspace, dict) else []
    folders = [
        folder
        for member in (members if isinstance(members, list) else [])
        if isinstance(member, str) and ".." not in member
        for folder in sorted(tree.glob(member))
        if folder.is_dir()
    ]
    manifests = [top, *(_manifest(folder / "Cargo.toml") for folder in folders[:199])]
    names = set()
    for data in manifests:
        package, lib = data.get("package"), data.get("lib")
        if isinstance(package, dict) and isinstance(package.get("name"), str):
            name = lib.get("name") if isinstance(lib, dict) else None
            names.add(str(name or package["name"]).replace("-", "_"))
    return names


def _manifest(path: Path) -> dict:
    """A Cargo.toml's tables; {} when it is not there or not TOML."""
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
