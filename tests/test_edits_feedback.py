"""The exact texts a model reads after a failed edit, pinned as snapshot files.

Run with SELFFORGE_UPDATE_SNAPSHOTS=1 to rewrite the snapshots after a deliberate change,
then read the diff: these messages are part of what makes repair rounds work.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selfforge.edits import apply_response

SNAPSHOTS = Path(__file__).parent / "snapshots" / "edits"
CALC = (
    "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
    "def mul(a, b):\n    result = a * b\n    return result\n"
)


def sr(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


GOOD = sr("calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")

SCENARIOS = {
    "not_found": sr("calc.py", "def mul(a, b):\n    result = a ** b\n", "x\n"),
    "ambiguous": sr("calc.py", "    return a - b\n", "    return 0\n"),
    "no_edits": "The bug is in add(): it subtracts instead of adding.",
    "unterminated": "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n=======\ndef add(a, b, c):\n",
    "two_failed_of_four": GOOD
    + sr("calc.py", "def div(a, b):\n", "x\n")
    + sr("calc.py", "def sub(a, b):\n    return a - b\n", "def sub(a, b):\n    return b - a\n")
    + sr("../outside.py", "", "x = 1\n"),
    "one_failed_of_two": GOOD + sr(".git/config", "", "[core]\n"),
    "protected": sr("selfforge.toml", "", "[goals]\n"),
    "missing_file": sr("mathlib.py", "def add(a, b):\n", "x\n"),
    "already_applied": sr(
        "calc.py", "def mul(a, b):\n    result = a / b\n", "def mul(a, b):\n    result = a * b\n"
    ),
    "lazy_placeholder": "calc.py\n```python\ndef add(a, b):\n    return a + b\n\n"
    "# ... rest of the code unchanged\n```\n",
    "lazy_shrink": "big.py\n```python\nx_0 = 0\n```\n",
    "udiff_no_context": "--- a/calc.py\n+++ b/calc.py\n@@ -20,0 +20,1 @@\n+VALUE = 1\n",
    "udiff_not_found": "--- a/calc.py\n+++ b/calc.py\n@@ -9,3 +9,3 @@\n def mul(a, b):\n"
    "-    result = a ** b\n+    result = a * b + 0\n     return result\n",
    "udiff_ambiguous": "--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-    return a - b\n"
    "+    return a + b\n",
    "elision_mismatch": sr("calc.py", "def add(a, b):\n    ...\n", "def add(a, b):\n    pass\n")
    + sr("calc.py", "def add(a, b):\n...\n    return a - b\n", "def add(a, b):\n    return 1\n"),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_feedback_snapshot(tmp_path: Path, name: str) -> None:
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "big.py").write_text("".join(f"x_{i} = {i}\n" for i in range(40)))
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mathlib.py").write_text("def add(a, b):\n    return a + b\n")
    result = apply_response(tmp_path, SCENARIOS[name], protected=["selfforge.toml"])
    assert not result.ok
    text = result.feedback() + "\n"
    snapshot = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("SELFFORGE_UPDATE_SNAPSHOTS") or not snapshot.exists():
        snapshot.write_text(text)
    assert text == snapshot.read_text()
    assert (tmp_path / "calc.py").read_text() == CALC
