"""The side-by-side diff: lines paired, numbered and escaped."""

from __future__ import annotations

import pytest

pytest.importorskip("pygments", reason="the dashboard needs the web extra (selfforge[web])")

from selfforge.web.diff import side_by_side

DIFF = "\n".join(
    [
        "diff --git a/calc.py b/calc.py",
        "index 1111111..2222222 100644",
        "--- a/calc.py",
        "+++ b/calc.py",
        "@@ -1,4 +1,5 @@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
        '+    # "<script>alert(1)</script>"',
        " ",
        " def sub(a, b):",
        "diff --git a/new.txt b/new.txt",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/new.txt",
        "@@ -0,0 +1 @@",
        "+hello",
        "",
    ]
)


def test_changed_lines_sit_side_by_side_with_their_numbers() -> None:
    calc, new = side_by_side(DIFF)
    assert (calc.path, calc.added, calc.removed) == ("calc.py", 2, 1)
    rows = [r for r in calc.rows if r.header is None]
    text = [(r.left.number, r.left.kind, r.right.number, r.right.kind) for r in rows]
    assert text == [
        (1, "ctx", 1, "ctx"),
        (2, "del", 2, "add"),
        (None, "empty", 3, "add"),
        (3, "ctx", 4, "ctx"),
        (4, "ctx", 5, "ctx"),
    ]
    assert "a - b" in _plain(rows[1].left.html) and "a + b" in _plain(rows[1].right.html)
    assert new.path == "new.txt" and new.added == 1


def test_code_in_a_diff_is_escaped() -> None:
    [calc, _] = side_by_side(DIFF)
    html = "".join(str(r.right.html) for r in calc.rows)
    assert "<script>" not in html and "&lt;script&gt;" in html


def _plain(html: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", html)
