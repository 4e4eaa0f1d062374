"""No privilege inside the sandbox, whoever runs selfforge (#21.1).

Run as root, bubblewrap keeps every capability unless told otherwise: a check could then
unmount the tmpfs that hides the user's home and read their keys. Each attack runs as
candidate code would (a check command in a real sandbox), with a control that shows it
works when the sandbox keeps root's capabilities, and again as an unprivileged user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox.command import CheckSpace, run_command

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- test-key-6f1c"
ATTACK = textwrap.dedent(
    """
    grep CapEff /proc/self/status
    umount {home} 2>/dev/null && echo UNMOUNTED
    cat {home}/.ssh/id_ed25519 2>/dev/null
    unshare -r true 2>/dev/null && echo NEW-USERNS
    mount -t tmpfs x {checkout} 2>/dev/null && echo MOUNTED
    echo pwned >> {home}/.bashrc 2>/dev/null && echo WROTE-BASHRC
    touch {checkout}/dropped 2>/dev/null && echo WROTE-CHECKOUT
    true
    """
)


CHECKOUT = Path(__file__).resolve().parents[1]


def _in_sight(path: Path) -> bool:
    """Is ``path`` where a sandbox shows the machine's own files: not under one of the
    places every sandbox has a fresh tmpfs of (/tmp, /var/tmp, /dev/shm, /run)?"""
    path = path.resolve()
    return not any(path == Path(p) or Path(p) in path.parents for p in sandbox.PRIVATE)


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside /tmp: every sandbox has a fresh /tmp of its own, so a home under
    the test's tmp_path would be out of sight anyway and prove nothing. Under HOME's
    .cache, unless HOME itself is out of sight (``HOME=$(mktemp -d)``): then beside the
    tests, in this checkout."""
    choices = [Path.home() / ".cache", CHECKOUT / ".selfforge-test-places"]
    cache = next((c for c in choices if _in_sight(c)), None)
    if cache is None:
        pytest.skip("HOME and this checkout are both where every sandbox has a fresh tmpfs")
    cache.mkdir(parents=True, exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix="selfforge-root-test-", dir=cache))
    place.chmod(0o777)
    yield place
    shutil.rmtree(place, ignore_errors=True)
    if cache.name == ".selfforge-test-places":
        with contextlib.suppress(OSError):  # another test's place may still be in it
            cache.rmdir()


def _places(tmp_path: Path) -> tuple[Path, Path, Path]:
    home, checkout, tree = tmp_path / "home", tmp_path / "checkout", tmp_path / "tree"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY + "\n")
    (home / ".bashrc").write_text("# rc\n")
    checkout.mkdir()
    tree.mkdir()
    for place in (tmp_path, home, checkout, tree):
        place.chmod(0o777)  # the unprivileged run writes its own files here too
    return home, checkout, tree


def _attack(home: Path, checkout: Path, tree: Path) -> str:
    space = CheckSpace(repo=checkout)
    command = ATTACK.format(home=home, checkout=checkout)
    return run_command(command, tree, 60, space).full_output


@pytest.mark.skipif(os.geteuid() != 0, reason="the attack is on a sandbox started by root")
def test_a_check_started_by_root_holds_no_capability(
    outside_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, checkout, tree = _places(outside_tmp)
    monkeypatch.setenv("HOME", str(home))  # the user's home: hidden from every check
    out = _attack(home, checkout, tree)
    assert "CapEff:\t0000000000000000" in out
    for sign in ("UNMOUNTED", KEY, "NEW-USERNS", "MOUNTED"):
        assert sign not in out, out
    # Writes land in the empty tmpfs that stands for each hidden place, never in the real one.
    assert (home / ".bashrc").read_text() == "# rc\n" and not (checkout / "dropped").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the control needs root")
def test_control_root_keeps_its_capabilities_without_the_defence(
    outside_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, checkout, tree = _places(outside_tmp)
    monkeypatch.setenv("HOME", str(home))
    # The process's probe is answered with the defence on, whichever test asked first; a
    # probe made without it would refuse this run, or (cached) every later one here.
    found = sandbox.probe()
    monkeypatch.setattr(sandbox, "probe", lambda: found)
    monkeypatch.setattr(sandbox, "unprivileged", lambda: [])  # the sandbox as it was
    out = _attack(home, checkout, tree)
    assert "CapEff:\t000001ff" in out and "UNMOUNTED" in out and KEY in out


def test_the_probe_reports_no_capability_inside() -> None:
    found = sandbox.probe()
    assert found.ok, found.detail
    assert found.capabilities.strip("0") == ""


def test_doctor_shows_the_capabilities_masked_files_and_channel_limits(
    tmp_path: Path, script
) -> None:
    from conftest import cli, directives, make_repo

    repo = make_repo(tmp_path / "r", {"test_a.py": "def test_a():\n    pass\n"}, directives())
    out = cli("doctor", "--repo", str(repo), "--model", script()).stdout
    assert "capabilities inside: none (CapEff 0000000000000000)" in out
    assert "credentials masked in shown toolchains:" in out
    assert "results channel: the plugin's secret required, at most 64 connections" in out


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_the_same_holds_for_an_unprivileged_user() -> None:
    # /root and pytest's folders are closed to other users: this user's places are in
    # /tmp (out of sight in every sandbox anyway); what is checked is that nothing
    # regains a privilege.
    if not _nobody_imports_selfforge():
        pytest.skip("this checkout or its venv is in a folder other users cannot enter")
    shared = Path(tempfile.mkdtemp(prefix="selfforge-nobody-"))
    shared.chmod(0o777)
    try:
        _as_nobody(*_places(shared), shared)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]


def _nobody_imports_selfforge() -> bool:
    """Can another user import selfforge from here? Not from a clone under /root (0700),
    where the README's commands run on a fresh machine as often as not."""
    paths = [p for p in sys.path if p]
    probe = "import sys; sys.path[:0] = sys.argv[1:]; import selfforge.judge.sandbox.command"
    done = subprocess.run(
        [*NOBODY, sys.executable, "-c", probe, *paths], capture_output=True, cwd="/"
    )
    return done.returncode == 0


def _as_nobody(home: Path, checkout: Path, tree: Path, tmp_path: Path) -> None:
    for path in (home / ".ssh", home / ".ssh" / "id_ed25519", home / ".bashrc"):
        os.chown(path, 65534, 65534)
    script = (
        "import sys; sys.path[:0] = sys.argv[4:]\n"
        "from pathlib import Path\n"
        "from selfforge.judge.sandbox.command import CheckSpace, run_command\n"
        "home, checkout, tree = map(Path, sys.argv[1:4])\n"
        f"command = {ATTACK!r}.format(home=home, checkout=checkout)\n"
        "print(run_command(command, tree, 60, CheckSpace(repo=checkout)).full_output)\n"
    )
    paths = [p for p in sys.path if p]
    proc = subprocess.run(
        [*NOBODY, sys.executable, "-c", script, str(home), str(checkout), str(tree), *paths],
        capture_output=True,
        text=True,
        # its own trees folder (trees.py): the suite's is in root's closed pytest folder
        env={
            **os.environ,
            "HOME": str(home),
            "TMPDIR": str(tmp_path),
            "SELFFORGE_TREES": str(tmp_path / "trees"),
        },
    )
    if "cannot create a sandbox" in proc.stdout + proc.stderr:
        pytest.skip("this machine gives unprivileged users no user namespaces")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "CapEff:\t0000000000000000" in out
    for sign in ("UNMOUNTED", KEY, "NEW-USERNS", "MOUNTED"):
        assert sign not in out, out
    assert (home / ".bashrc").read_text() == "# rc\n" and not (checkout / "dropped").exists()
