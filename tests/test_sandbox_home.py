"""Home by allowlist, credentials masked (#21.5, #33.7): a toolchain folder under the home
is shown to checks by its exact folder (its programs run) and nothing beside it is; where
a folder is shown whole (the user's ``[sandbox] readable``), the credential files inside
it read empty, and the scrubber masks their values wherever they would be shown.
Control: without the masking, the check reads the credential."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox.command import CheckSpace, run_command
from selfforge.models.secrets import mask


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Outside /tmp: every sandbox has a fresh /tmp, where a home would be out of sight anyway.
    cache = Path.home() / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    place = Path(tempfile.mkdtemp(prefix="selfforge-home-test-", dir=cache))
    tool = place / ".cargo" / "bin" / "sf-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    monkeypatch.setenv("HOME", str(place))
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    yield place
    shutil.rmtree(place, ignore_errors=True)


def _check(home: Path, tmp_path: Path, token: str, shown: tuple[Path, ...] = ()) -> str:
    (home / ".cargo" / "credentials.toml").write_text(f'[registry]\ntoken = "{token}"\n')
    tree, checkout = tmp_path / "tree", tmp_path / "checkout"
    tree.mkdir()
    checkout.mkdir()
    command = f"sf-tool; cat {home}/.cargo/credentials.toml; echo end"
    space = CheckSpace(repo=checkout, readable=shown)
    return run_command(command, tree, 60, space).full_output


def test_beside_a_shown_toolchain_folder_nothing_of_home_is_there(
    home: Path, tmp_path: Path
) -> None:
    token = "cio" + secrets.token_hex(16)
    out = _check(home, tmp_path, token)  # ~/.cargo/bin is on PATH: only it is shown
    assert "tool ran" in out and "end" in out
    assert token not in out and "No such file" in out


def test_a_toolchain_runs_but_its_credentials_read_empty(home: Path, tmp_path: Path) -> None:
    token = "cio" + secrets.token_hex(16)
    out = _check(home, tmp_path, token, shown=(home / ".cargo",))
    assert "tool ran" in out and "end" in out
    assert token not in out
    assert mask(f"leaked: {token}") == "leaked: ***"  # the scrubber knows the masked file


def test_control_without_masking_the_check_reads_the_credential(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "credentials_in", lambda roots, depth=4: ())
    token = "cio" + secrets.token_hex(16)
    out = _check(home, tmp_path, token, shown=(home / ".cargo",))
    assert "tool ran" in out and token in out
