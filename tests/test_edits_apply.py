"""apply_response on real files in a temporary directory: tolerances, refusals, atomicity."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.edits import apply_response

ADD = "def add(a, b):\n    return a - b\n"
CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def block(path: str, search: str, replace: str, marker: int = 7) -> str:
    return (
        f"{path}\n{'<' * marker} SEARCH\n{search}{'=' * marker}\n{replace}{'>' * marker} REPLACE\n"
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(CALC)
    return tmp_path


def test_exact_block_applies(repo: Path) -> None:
    reply = block("calc.py", ADD, ADD.replace("-", "+"))
    result = apply_response(repo, reply)
    assert result.ok and result.changed == ["calc.py"] and result.n_edits == 1
    assert (repo / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)


@pytest.mark.parametrize(
    "name_line",
    [
        "calc.py",
        "**calc.py**",
        "`calc.py`",
        "# calc.py",
        "calc.py:",
        "./calc.py",
        "### `calc.py`",
        "File: calc.py",
        "**`./calc.py`**:",
    ],
)
def test_decorated_file_names(repo: Path, name_line: str) -> None:
    reply = block(name_line, ADD, ADD.replace("-", "+"))
    assert apply_response(repo, reply).ok
    assert "return a + b" in (repo / "calc.py").read_text()


@pytest.mark.parametrize(
    "template",
    [
        "calc.py\n```python\n{b}```\n",
        "```python\ncalc.py\n{b}```\n",
        "```calc.py\n{b}```\n",
        "```python calc.py\n{b}```\n",
        '```py title="calc.py"\n{b}```\n',
        "~~~python\n# calc.py\n{b}~~~\n",
        "Here is the fix for `calc.py`:\n\n```python\n{b}```\n",
    ],
)
def test_file_name_inside_or_outside_fence(repo: Path, template: str) -> None:
    b = block("", ADD, ADD.replace("-", "+"))
    b = b.split("\n", 1)[1]  # drop the empty path line
    assert apply_response(repo, template.format(b=b)).ok
    assert "return a + b" in (repo / "calc.py").read_text()


@pytest.mark.parametrize("marker", [5, 6, 8, 9])
def test_marker_lengths_and_trailing_spaces(repo: Path, marker: int) -> None:
    reply = block(
        "calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return 0\n", marker
    )
    reply = reply.replace(" SEARCH\n", " SEARCH  \n").replace("=\n", "=   \n")
    assert apply_response(repo, reply).ok


def test_crlf_reply_on_lf_file(repo: Path) -> None:
    reply = block("calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return 1\n")
    assert apply_response(repo, reply.replace("\n", "\r\n")).ok
    assert (repo / "calc.py").read_bytes() == CALC.replace("a - b", "1", 1).encode()


def test_crlf_file_keeps_crlf(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    assert apply_response(tmp_path, block("w.py", "b = 2\n", "b = 3\nc = 4\n")).ok
    assert (tmp_path / "w.py").read_bytes() == b"a = 1\r\nb = 3\r\nc = 4\r\n"


def test_trailing_whitespace_and_blank_edges(repo: Path) -> None:
    reply = block(
        "calc.py", "\ndef add(a, b):   \n    return a - b\n\n", "\ndef add(a, b):\n    return 9\n\n"
    )
    assert apply_response(repo, reply).ok
    assert (repo / "calc.py").read_text() == CALC.replace("a - b", "9", 1)


def test_shifted_indentation_is_reindented(tmp_path: Path) -> None:
    src = "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n"
    (tmp_path / "a.py").write_text(src)
    reply = block(
        "a.py", "if x:\n    return 1\n", "if x and y:\n    return 1\nelif z:\n    return 3\n"
    )
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "a.py").read_text() == (
        "class A:\n    def f(self):\n        if x and y:\n            return 1\n"
        "        elif z:\n            return 3\n        return 2\n"
    )


def test_ambiguous_search_is_refused_with_line_numbers(repo: Path) -> None:
    result = apply_response(repo, block("calc.py", "    return a - b\n", "    return 0\n"))
    assert not result.ok
    assert "lines 2, 6" in result.failures[0].message
    assert (repo / "calc.py").read_text() == CALC


def test_exact_match_wins_over_tolerant_duplicates(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("x = 1  \ny = 2\nx = 1\ny = 2\n")
    assert apply_response(tmp_path, block("t.py", "x = 1\ny = 2\n", "z = 0\n")).ok
    assert (tmp_path / "t.py").read_text() == "x = 1  \ny = 2\nz = 0\n"
    # Neither copy matches exactly, and both match loosely: refused, not guessed.
    (tmp_path / "t.py").write_text("x = 1  \ny = 2\nx = 1\ny = 2  \n")
    assert not apply_response(tmp_path, block("t.py", "x = 1\ny = 2\n", "z = 0\n")).ok


def test_not_found_shows_similar_lines(repo: Path) -> None:
    result = apply_response(repo, block("calc.py", "def add(a, c):\n    return a - b\n", "x\n"))
    assert not result.ok
    msg = result.failures[0].message
    assert "1 | def add(a, b):" in msg and "not found" in msg


def test_all_or_nothing(repo: Path) -> None:
    (repo / "other.py").write_text("x = 1\n")
    reply = block("other.py", "x = 1\n", "x = 2\n") + block("calc.py", "nope\n", "x\n")
    reply += block("new.py", "", "print('hi')\n")
    result = apply_response(repo, reply)
    assert not result.ok and result.changed == [] and result.fine == [1, 3]
    assert (repo / "other.py").read_text() == "x = 1\n"
    assert not (repo / "new.py").exists()
    assert "Edit 2 (calc.py) failed" in result.feedback()
    assert "The other 2 edits were fine; resend only this one." in result.feedback()


def test_several_blocks_any_order_and_several_files(repo: Path) -> None:
    (repo / "b.py").write_text("one\ntwo\nthree\n")
    reply = (
        block("calc.py", "def sub(a, b):\n    return a - b\n", "def sub(a, b):\n    return -1\n")
        + block("b.py", "three\n", "3\n")
        + block("calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return 1\n")
        + block("b.py", "one\n", "1\n")
    )
    result = apply_response(repo, reply)
    assert result.ok and result.changed == ["b.py", "calc.py"]
    assert (repo / "b.py").read_text() == "1\ntwo\n3\n"
    assert "return -1" in (repo / "calc.py").read_text()


def test_block_depending_on_a_later_block_applies(repo: Path) -> None:
    reply = block("calc.py", "    return 100\n", "    return 200\n") + block(
        "calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return 100\n"
    )
    assert apply_response(repo, reply).ok
    assert "return 200" in (repo / "calc.py").read_text()


def test_create_append_delete(repo: Path) -> None:
    reply = (
        block("pkg/new_mod.py", "", "VALUE = 1\n")
        + block("calc.py", "", "\n\ndef mul(a, b):\n    return a * b\n")
        + block("calc.py", "def add(a, b):\n    return a - b\n\n\n", "")
    )
    result = apply_response(repo, reply)
    assert result.ok, result.feedback()
    assert (repo / "pkg/new_mod.py").read_text() == "VALUE = 1\n"
    assert (repo / "calc.py").read_text() == (
        "def sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    )


def test_elision_lines(tmp_path: Path) -> None:
    src = "def f():\n    a = 1\n    b = 2\n    c = 3\n    return a\n"
    (tmp_path / "f.py").write_text(src)
    reply = block("f.py", "def f():\n    ...\n    return a\n", "def f(x):\n    ...\n    return x\n")
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "f.py").read_text() == src.replace("f()", "f(x)").replace(
        "return a", "return x"
    )


def test_no_edits_and_unterminated(repo: Path) -> None:
    result = apply_response(repo, "I think the bug is in add().")
    assert not result.ok and result.n_edits == 0
    assert "No edits were found" in result.feedback() and "<<<<<<< SEARCH" in result.feedback()
    result = apply_response(repo, "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n=======\nx\n")
    assert not result.ok and "unterminated" in result.failures[0].message
    assert (repo / "calc.py").read_text() == CALC


def test_missing_file_suggests_real_path(repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src/util.py").write_text("x = 1\n")
    result = apply_response(repo, block("util.py", "x = 1\n", "x = 2\n"))
    assert "Did you mean src/util.py?" in result.failures[0].message


def test_dry_run_writes_nothing(repo: Path) -> None:
    reply = block("calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return 1\n")
    result = apply_response(repo, reply, dry_run=True)
    assert result.ok and result.changed == ["calc.py"]
    assert (repo / "calc.py").read_text() == CALC


def test_already_applied_hint(repo: Path) -> None:
    reply = block(
        "calc.py", "def add(a, b):\n    return a * b\n", "def add(a, b):\n    return a - b\n"
    )
    result = apply_response(repo, reply)
    assert "already in the file" in result.failures[0].message


def test_file_mode_is_kept(repo: Path) -> None:
    (repo / "run.sh").write_text("echo hi\n")
    (repo / "run.sh").chmod(0o755)
    assert apply_response(repo, block("run.sh", "echo hi\n", "echo bye\n")).ok
    assert (repo / "run.sh").stat().st_mode & 0o777 == 0o755


def test_mixed_formats_in_one_reply_all_apply(repo: Path) -> None:
    reply = (
        "First the fix:\n\n```python\n"
        + block("calc.py", ADD, ADD.replace("-", "+"))
        + "```\n\nThen a new helper module:\n\nhelpers.py\n```python\nHELP = 1\n```\n"
        + "And a diff for sub:\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -5,2 +5,2 @@\n"
        + " def sub(a, b):\n-    return a - b\n+    return b - a\n```\n"
    )
    result = apply_response(repo, reply)
    assert result.ok, result.feedback()
    assert result.n_edits == 3 and result.changed == ["calc.py", "helpers.py"]
    assert (repo / "helpers.py").read_text() == "HELP = 1\n"
    assert "return a + b" in (repo / "calc.py").read_text()
    assert "return b - a" in (repo / "calc.py").read_text()


def test_divider_like_line_in_the_code(tmp_path: Path) -> None:
    doc = "Title\n=======\n\nOld text.\n\nUsage\n=====\n\nRun it.\n"
    (tmp_path / "README.rst").write_text(doc)
    reply = block("README.rst", "Usage\n=====\n\nRun it.\n", "Usage\n=====\n\nRun it twice.\n")
    assert apply_response(tmp_path, reply).ok
    reply = block("README.rst", "Title\n=======\n\nOld text.\n", "Title\n=======\n\nNew text.\n")
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "README.rst").read_text() == doc.replace("Old", "New").replace(
        "Run it.", "Run it twice."
    )


def test_whole_file_with_nested_fences(tmp_path: Path) -> None:
    content = "# Doc\n\n```python\nprint(1)\n```\n\nEnd.\n"
    reply = f"README.md\n````markdown\n{content}````\n"
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "README.md").read_text() == content
    reply = f"README.md\n```markdown\n{content.replace('End', 'Fin')}```\n"
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "README.md").read_text() == content.replace("End", "Fin")


def test_empty_search_that_recreates_an_existing_file_is_refused(repo: Path) -> None:
    result = apply_response(repo, block("calc.py", "", CALC.replace("a - b", "a + b", 1)))
    assert not result.ok and "already in the file" in result.failures[0].message
    assert (repo / "calc.py").read_text() == CALC


def test_selfforge_state_dir_is_refused(repo: Path) -> None:
    result = apply_response(repo, block(".selfforge/journal.db", "", "x\n"))
    assert not result.ok and ".selfforge/" in result.failures[0].message


def test_root_must_be_a_directory(repo: Path) -> None:
    with pytest.raises(NotADirectoryError):
        apply_response(repo / "calc.py", block("calc.py", "", "x\n"))


def test_carry_over_keeps_the_fine_edits_for_the_repair_round(repo: Path) -> None:
    from selfforge.edits import carry_over

    first = block("calc.py", ADD, ADD.replace("-", "+")) + block("calc.py", "nope\n", "x\n")
    result = apply_response(repo, first)
    assert not result.ok
    repair = block(
        "calc.py", "def sub(a, b):\n    return a - b\n", "def sub(a, b):\n    return 0\n"
    )
    assert apply_response(repo, carry_over(first, result) + repair).ok
    assert (repo / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1).replace(
        "return a - b", "return 0"
    )


def test_bom_and_missing_final_newline_are_kept(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_bytes(b"\xef\xbb\xbfimport os\nx = 1")
    assert apply_response(tmp_path, block("b.py", "import os\n", "import sys\n")).ok
    assert (tmp_path / "b.py").read_bytes() == b"\xef\xbb\xbfimport sys\nx = 1"


def test_empty_whole_file_block_is_refused(repo: Path) -> None:
    result = apply_response(repo, "calc.py\n```python\n```\n")
    assert not result.ok and "erased" in result.failures[0].message


def test_line_numbers_copied_from_feedback_are_ignored(repo: Path) -> None:
    search = " 1 | def add(a, b):\n 2 |     return a - b\n"
    assert apply_response(repo, block("calc.py", search, ADD.replace("-", "+"))).ok
    assert (repo / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)


def test_search_found_in_another_file_is_pointed_out(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "ops.py").write_text("x = 0\n\n" + ADD)
    (repo / "calc.py").write_text("def sub(a, b):\n    return a - b\n")
    result = apply_response(repo, block("calc.py", ADD, ADD.replace("-", "+")))
    assert "It is in pkg/ops.py (line 3)" in result.failures[0].message


@pytest.mark.parametrize(
    "inner",
    [
        "<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n"
        "    return a + b\n>>>>>>> REPLACE\n",
        "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n",
    ],
)
def test_whole_file_asked_but_other_format_sent_is_read_as_sent(repo: Path, inner: str) -> None:
    result = apply_response(repo, f"calc.py\n```python\n{inner}```\n", fmt="whole_file")
    assert result.ok, result.feedback()
    assert (repo / "calc.py").read_text() == CALC.replace("a - b", "a + b", 1)


def test_whole_file_of_code_holding_markers_is_refused(repo: Path) -> None:
    from selfforge.edits.wholefile import lazy_reason

    new = ["x = 1", "<<<<<<< SEARCH", "x = 2"]
    assert "SEARCH/REPLACE markers" in (lazy_reason(["x = 1"], new, "calc.py") or "")
    assert lazy_reason(["x = 1"], new, "docs/format.md") is None


def test_tabs_in_the_file_spaces_in_the_reply(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(
        "build:\n\tgo build ./...\n\tgo vet ./...\n\ntest:\n\tgo test\n"
    )
    reply = block("Makefile", "build:\n    go build ./...\n", "build:\n    go build -v ./...\n")
    result = apply_response(tmp_path, reply)
    assert result.ok, result.feedback()
    assert (tmp_path / "Makefile").read_text().startswith("build:\n\tgo build -v ./...\n\tgo vet")
    (tmp_path / "m.go").write_text("func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n")
    reply = block(
        "m.go", "    if x {\n        return 1\n    }\n", "    if x {\n        return 2\n    }\n"
    )
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "m.go").read_text() == "func f() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"
