"""A journal made by a real scripted run, and `selfforge serve` as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import CALC, FIX_ADD, FIX_ADD_BREAK_SUB, TEST_CALC, directives, make_repo

SCRIPT_TAG = "<script>window.pwned = true; alert('pwned')</script>"
# A comment edit: harmless, passes every check, so a later run lands it.
DOCUMENT_MUL = """calc.py
<<<<<<< SEARCH
def mul(a, b):
=======
def mul(a, b):  # the product of a and b
>>>>>>> REPLACE
"""


def journal_repo(root: Path) -> Path:
    """A repository whose journal holds one run: attempt 1 rejected (its reply carries a
    <script> tag), attempt 2 accepted and landed."""
    repo = make_repo(root, {"calc.py": CALC, "test_calc.py": TEST_CALC}, directives(cycles=2))
    replies = {
        "propose": [f"{FIX_ADD_BREAK_SUB}\nNote: {SCRIPT_TAG}", FIX_ADD],
        "review": ["APPROVE: the fix is right"],
    }
    proc = run(repo, replies)
    output, _ = proc.communicate()
    assert proc.returncode == 0, output
    return repo


def run(repo: Path, replies: dict[str, list[str]], *args: str) -> subprocess.Popen[str]:
    """Start `selfforge run` with a scripted model; the caller waits (or not)."""
    script = repo.parent / f"script-{len(list(repo.parent.glob('script-*')))}.json"
    script.write_text(json.dumps(replies))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "selfforge",
            "run",
            "--repo",
            str(repo),
            "--model",
            f"script:{script}",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    return proc


class Server:
    """`selfforge serve --port 0` in a subprocess; ``url`` is what it printed."""

    def __init__(self, repo: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "selfforge", "serve", "--repo", str(repo), "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "300"},
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        if "dashboard on " not in first:
            self.stop()
            raise AssertionError(f"serve did not start: {first}{self.proc.stdout.read()}")
        self.url = first.split("dashboard on ", 1)[1].split()[0]
        self.base = self.url.split("?", 1)[0].rstrip("/")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
