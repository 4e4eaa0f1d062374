"""A disk quota for the tree and every writable place (#21.8): a check that writes more
than [sandbox] disk_mb into the candidate's tree is killed and fails naming the limit;
/dev/shm, /run and /var/tmp are as small as /tmp. Each with its control."""

from __future__ import annotations

from pathlib import Path

from selfforge.judge.sandbox.command import CheckSpace, run_command

WRITE_TREE = "head -c {mb}M /dev/zero > big.bin; sync; sleep 1; echo wrote"


def _space(tmp_path: Path, **kw: int) -> CheckSpace:
    checkout = tmp_path / "checkout"
    checkout.mkdir(exist_ok=True)
    return CheckSpace(repo=checkout, **kw)


def test_writing_past_the_disk_limit_kills_the_check_and_names_it(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    result = run_command(WRITE_TREE.format(mb=256), tree, 60, _space(tmp_path, disk_mb=16))
    assert result.limit == "disk"
    assert "the disk limit (16 MB written to the tree, [sandbox] disk_mb)" in result.output
    # Control: the same write under a limit it fits in.
    (tree / "big.bin").unlink()
    fits = run_command(WRITE_TREE.format(mb=8), tree, 60, _space(tmp_path, disk_mb=16))
    assert fits.limit is None and fits.exit_code == 0 and "wrote" in fits.output


def test_dev_shm_is_as_small_as_tmp(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    command = "head -c 64M /dev/zero > /dev/shm/big && echo FITS || echo FULL"
    small = run_command(command, tree, 60, _space(tmp_path, tmp_mb=16))
    assert "FULL" in small.output
    roomy = run_command(command, tree, 60, _space(tmp_path, tmp_mb=128))  # control
    assert "FITS" in roomy.output
