"""parse_edits: formats, detection, decorated names, diffs and whole files."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfforge.edits import (
    FORMATS,
    apply_response,
    default_format_for,
    format_instructions,
    parse_edits,
)
from selfforge.edits.markers import clean_path


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("calc.py", "calc.py"),
        ("**src/calc.py**", "src/calc.py"),
        ("`calc.py`", "calc.py"),
        ("# calc.py", "calc.py"),
        ("calc.py:", "calc.py"),
        ("./src/calc.py", "src/calc.py"),
        ("1. `calc.py`", "calc.py"),
        ("Filename: calc.py", "calc.py"),
        ("Update `src\\calc.py` as follows:", "src/calc.py"),
        ("Makefile", "Makefile"),
        (".gitignore", ".gitignore"),
        ("Here is the change:", None),
        ("return x", None),
        ("def f():", None),
        ("", None),
    ],
)
def test_clean_path(line: str, path: str | None) -> None:
    assert clean_path(line) == path


def test_several_blocks_inherit_the_path() -> None:
    reply = (
        "calc.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n"
        "other.py\n```python\n<<<<<<< SEARCH\ne\n=======\nf\n>>>>>>> REPLACE\n```\n"
    )
    edits = parse_edits(reply)
    assert [(e.index, e.path, e.search, e.replace) for e in edits] == [
        (1, "calc.py", ("a",), ("b",)),
        (2, "calc.py", ("c",), ("d",)),
        (3, "other.py", ("e",), ("f",)),
    ]


def test_first_block_without_path_is_an_error() -> None:
    (edit,) = parse_edits("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n")
    assert edit.path is None and "names no file" in (edit.error or "")


def test_missing_divider_is_unterminated() -> None:
    (edit,) = parse_edits("x.py\n<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n")
    assert "unterminated" in (edit.error or "")


def test_detects_udiff_with_git_header_and_bare_hunks() -> None:
    reply = (
        "```diff\ndiff --git a/calc.py b/calc.py\nindex 1..2 100644\n--- a/calc.py\n"
        "+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
        "\n@@ -10,2 +10,2 @@\n x = 1\n-y = 2\n+y = 3\n```\n"
    )
    edits = parse_edits(reply)
    assert [e.kind for e in edits] == ["udiff", "udiff"]
    assert edits[0].search == ("def add(a, b):", "    return a - b")
    assert edits[0].replace == ("def add(a, b):", "    return a + b")
    assert edits[1].search == ("x = 1", "y = 2") and edits[1].path == "calc.py"


def test_udiff_new_and_deleted_files(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text("gone = 1\n")
    reply = (
        "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+A = 1\n+B = 2\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone = 1\n"
    )
    result = apply_response(tmp_path, reply)
    assert result.ok, result.feedback()
    assert result.changed == ["old.py", "pkg/new.py"]
    assert (tmp_path / "pkg/new.py").read_text() == "A = 1\nB = 2\n"
    assert not (tmp_path / "old.py").exists()


def test_udiff_with_wrong_line_numbers_applies_by_content(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 2\n\nc = 3\nd = 4\n")
    reply = "--- m.py\n+++ m.py\n@@ -90,4 +90,4 @@\n b = 2\n\n-c = 3\n+c = 30\n d = 4\n"
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 2\n\nc = 30\nd = 4\n"


def test_whole_file_block(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text("x = 1\n")
    reply = "Here is the new file.\n\n**w.py**\n```python\nx = 2\ny = 3\n```\n"
    (edit,) = parse_edits(reply)
    assert edit.kind == "whole_file" and edit.path == "w.py"
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "w.py").read_text() == "x = 2\ny = 3\n"


def test_prose_naming_a_file_before_a_snippet_is_not_a_whole_file() -> None:
    assert parse_edits("The bug is in `calc.py`:\n```python\nreturn a - b\n```\n") == []


def test_unterminated_whole_file_block() -> None:
    (edit,) = parse_edits("w.py\n```python\nx = 2\n")
    assert "unterminated" in (edit.error or "")


def test_asked_for_format_reads_first_and_others_still_count() -> None:
    reply = "w.py\n```python\nx = 2\n```\n"
    assert [e.kind for e in parse_edits(reply, "search_replace")] == ["whole_file"]
    assert [e.kind for e in parse_edits(reply, "whole_file")] == ["whole_file"]
    wrapped = "w.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n"
    assert [e.kind for e in parse_edits(wrapped, "whole_file")] == ["search_replace"]
    # A document may quote a SEARCH/REPLACE block: asked for whole files, it is one.
    doc = "README.md\n````markdown\n# Format\n\n" + wrapped + "````\n"
    assert [(e.kind, e.path) for e in parse_edits(doc, "whole_file")] == [
        ("whole_file", "README.md")
    ]


def test_unknown_format() -> None:
    reply = "w.py\n```python\nx = 2\n```\n"
    with pytest.raises(ValueError, match="unknown edit format"):
        parse_edits(reply, "xml")


def test_format_instructions_cover_every_format() -> None:
    for fmt in FORMATS:
        assert "Paths are relative to the repository root." in format_instructions(fmt)
    assert "<<<<<<< SEARCH" in format_instructions("search_replace")
    assert "+++ b/path" in format_instructions("udiff")


@pytest.mark.parametrize(
    ("model", "fmt"),
    [
        ("gemini:gemini-2.5-flash", "search_replace"),
        ("anthropic:claude-sonnet-4-5", "search_replace"),
        ("openai:gpt-4.1-mini", "search_replace"),
        ("ollama:qwen2.5-coder:7b", "whole_file"),
        ("ollama:llama3.2:1b", "whole_file"),
        ("qwen2.5-coder:1.5b", "whole_file"),
        ("ollama:qwen2.5-coder:32b", "search_replace"),
        ("ollama:mystery", "whole_file"),
        ("tinyllama", "whole_file"),
        ("mistral-small-latest", "whole_file"),
        ("script:replies.json", "search_replace"),
    ],
)
def test_default_format_for(model: str, fmt: str) -> None:
    assert default_format_for(model) == fmt


@pytest.mark.parametrize(
    ("line", "placeholder"),
    [
        ("# ... rest of the code unchanged ...", True),
        ("    # ... existing methods ...", True),
        ("// ... existing code ...", True),
        ("# (remaining code unchanged)", True),
        ("<!-- rest of the file unchanged -->", True),
        ("# ...", True),
        ("/* ... */", True),
        ("    ...", False),  # Python's Ellipsis: protocol and stub bodies
        ("#", False),
        ("other = code.strip()", False),
        ("x = 1  # rest of code", False),
        ("# TODO: handle the rest of the file", False),
    ],
)
def test_placeholder_lines(line: str, placeholder: bool) -> None:
    from selfforge.edits.wholefile import is_placeholder

    assert is_placeholder(line) is placeholder


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("calc.py (updated)", "calc.py"),
        ("src/calc.py - fix add", "src/calc.py"),
        ("e.g.", None),
        ("calc.py: the fix", "calc.py"),
        ("Here is the fix.", None),
    ],
)
def test_clean_path_with_trailing_words(line: str, path: str | None) -> None:
    assert clean_path(line) == path


def test_bare_hunks_under_different_path_lines(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b.py").write_text("x = 1\ny = 2\n")
    reply = (
        "a.py\n```diff\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n```\n\n"
        "b.py\n```diff\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 4\n```\n"
    )
    assert [e.path for e in parse_edits(reply)] == ["a.py", "b.py"]
    assert apply_response(tmp_path, reply).ok
    assert (tmp_path / "b.py").read_text() == "x = 1\ny = 4\n"
