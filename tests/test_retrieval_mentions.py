"""What a task names: code-like identifiers and file paths, not English words."""

from __future__ import annotations

import pytest

from selfforge.context.excerpt import focused_excerpt
from selfforge.context.index import DefRecord
from selfforge.context.mentions import find_mentions, looks_like_code
from selfforge.context.words import query_words, split_identifier

PATHS = ["pkg/image.py", "pkg/writers/html/__init__.py", "docs/guide.md", "tools/run.py"]
DEFINERS = {"image": {"pkg/image.py"}, "ImageReader": {"pkg/image.py"}, "run": {"tools/run.py"}}


@pytest.mark.parametrize(
    ("task", "ident", "is_code"),
    [
        ("warn if image scaling fails", "image", False),
        ("call image() with a path", "image", True),
        ("the `image` node loses its class", "image", True),
        ("use ImageReader for SVG", "ImageReader", True),
        ("fix read_file on Windows", "read_file", True),
        ("nodes.image keeps attributes", "image", True),
        ("the run", "run", False),
    ],
)
def test_identifiers_count_only_when_written_as_code(task: str, ident: str, is_code: bool) -> None:
    assert looks_like_code(ident, task) is is_code


def test_paths_are_named_by_full_path_file_name_module_or_tail() -> None:
    assert find_mentions("edit tools/run.py", PATHS, DEFINERS).files == {"tools/run.py"}
    assert find_mentions("fix image.py please", PATHS, DEFINERS).files == {"pkg/image.py"}
    assert find_mentions("pkg.image breaks", PATHS, DEFINERS).files == {"pkg/image.py"}
    tail = find_mentions("moved from writers/html/__init__.py", PATHS, DEFINERS)
    assert tail.files == {"pkg/writers/html/__init__.py"}
    assert find_mentions("the guide is wrong", PATHS, DEFINERS).files == set()


def test_query_words_split_identifiers_and_drop_stopwords() -> None:
    assert split_identifier("HTTPServer_v2") == ("http", "server", "v2")
    assert query_words("Fix the ContextBundle in build_context") == [
        "contextbundle",
        "context",
        "bundle",
        "build_context",
        "build",
    ]


def test_an_excerpt_keeps_the_units_about_the_task_in_file_order() -> None:
    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(40))
    text += "def parse_header(line):\n    return line.split(':')\n"
    defs = [
        DefRecord("m.py", f"f{i}", "function", "", f"def f{i}(x)", "", 1 + 4 * i, 2 + 4 * i)
        for i in range(40)
    ]
    defs.append(DefRecord("m.py", "parse_header", "function", "", "", "", 161, 162))
    excerpt = focused_excerpt(text, defs, ["parse_header", "header"], budget=40)
    assert "def parse_header(line):\n    return line.split(':')\n" in excerpt
    assert excerpt.startswith("⋮ (lines 1-160 not shown)\n")
