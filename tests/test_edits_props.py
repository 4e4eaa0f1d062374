"""Property tests: exact blocks apply exactly; no reply crashes the parser or escapes."""

from __future__ import annotations

import shutil
import sysconfig
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from selfforge.edits import apply_response, parse_edits

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SOURCES = [
    STDLIB / name
    for name in (
        "textwrap.py",
        "bisect.py",
        "shlex.py",
        "fnmatch.py",
        "colorsys.py",
        "calendar.py",
        "queue.py",
        "json/encoder.py",
        "heapq.py",
        "glob.py",
    )
    if (STDLIB / name).exists()
]
MARKER_START = ("<<<<<", "=====", ">>>>>", "```", "~~~")
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

replacement_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40
).filter(lambda s: not s.lstrip().startswith(MARKER_START))


def _count(lines: list[str], window: list[str]) -> int:
    m = len(window)
    return sum(1 for i in range(len(lines) - m + 1) if lines[i : i + m] == window)


@SETTINGS
@given(
    source=st.sampled_from(SOURCES),
    start_frac=st.floats(0, 1),
    size=st.integers(1, 8),
    replace=st.lists(replacement_line, max_size=6),
)
def test_exact_unique_window_applies_exactly(
    source: Path, start_frac: float, size: int, replace: list[str]
) -> None:
    text = source.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]
    start = int(start_frac * (len(lines) - size))
    window = lines[start : start + size]
    assume(any(x.strip() for x in window) and _count(lines, window) == 1)
    assume(not any(x.lstrip().startswith(MARKER_START) for x in window))
    reply = "f.py\n<<<<<<< SEARCH\n" + "".join(x + "\n" for x in window) + "=======\n"
    reply += "".join(x + "\n" for x in replace) + ">>>>>>> REPLACE\n"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.py").write_bytes(text.encode())
        result = apply_response(Path(tmp), reply)
        assert result.ok, result.feedback()
        expected = lines[:start] + replace + lines[start + size :]
        assert (Path(tmp) / "f.py").read_bytes() == "".join(x + "\n" for x in expected).encode()


@SETTINGS
@given(
    source=st.sampled_from(SOURCES),
    start_frac=st.floats(0, 1),
    size=st.integers(2, 6),
    shift=st.sampled_from([-8, -4, 0, 4]),
    trailing=st.lists(st.sampled_from(["", " ", "  ", "\t"]), min_size=6, max_size=6),
    blank_edges=st.booleans(),
    crlf=st.booleans(),
)
def test_sloppy_copy_of_a_unique_window_applies_exactly(
    source: Path,
    start_frac: float,
    size: int,
    shift: int,
    trailing: list[str],
    blank_edges: bool,
    crlf: bool,
) -> None:
    """Shifted indentation, trailing whitespace, blank edges and CRLF, all at once."""
    text = source.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]
    start = int(start_frac * (len(lines) - size))
    window = lines[start : start + size]
    stripped = [x.strip() for x in lines]
    needle = [x.strip() for x in window]
    hits = sum(stripped[i : i + size] == needle for i in range(len(lines) - size + 1))
    indents = [len(x) - len(x.lstrip()) for x in window if x.strip()]
    assume(window[0].strip() and window[-1].strip() and hits == 1 and min(indents) + shift >= 0)
    assume(not any(x.lstrip().startswith(MARKER_START) for x in window))
    assume(all(" " * (len(x) - len(x.lstrip())) == x[: len(x) - len(x.lstrip())] for x in window))
    assume(all(x == x.rstrip() for x in window))

    def sloppy(block: list[str]) -> list[str]:
        out = [
            " " * max(0, len(x) - len(x.lstrip()) + shift) + x.strip() if x.strip() else ""
            for x in block
        ]
        # The first line always gets a trailing space: never an exact copy, so the
        # REPLACE goes through the tolerant rungs, which drop trailing whitespace.
        out = [x + t for x, t in zip(out, [" ", *trailing], strict=False)] + out[
            len(trailing) + 1 :
        ]
        return ["", *out, ""] if blank_edges else out

    new = [
        window[0],
        window[0][: len(window[0]) - len(window[0].lstrip())] + "added = 1",
        *window[1:],
    ]
    reply = "f.py\n<<<<<<< SEARCH\n" + "".join(x + "\n" for x in sloppy(window)) + "=======\n"
    reply += "".join(x + "\n" for x in sloppy(new)) + ">>>>>>> REPLACE\n"
    if crlf:
        reply = reply.replace("\n", "\r\n")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.py").write_bytes(text.encode())
        result = apply_response(Path(tmp), reply)
        assert result.ok, result.feedback()
        expected = lines[:start] + [x.rstrip() for x in new] + lines[start + size :]
        assert (Path(tmp) / "f.py").read_text(encoding="utf-8") == "".join(
            x + "\n" for x in expected
        )


@SETTINGS
@given(
    source=st.sampled_from(SOURCES),
    start_frac=st.floats(0, 1),
    size=st.integers(1, 6),
    replace=st.lists(replacement_line, max_size=5),
    offset=st.integers(-50, 50),
)
def test_diff_of_a_unique_change_applies_exactly(
    source: Path, start_frac: float, size: int, replace: list[str], offset: int
) -> None:
    """A unified diff (line numbers shifted at random) applies to exactly the new text."""
    import difflib
    import re

    text = source.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]
    start = int(start_frac * (len(lines) - size))
    new = lines[:start] + replace + lines[start + size :]
    assume(new != lines and not any(x.startswith(("--- ", "+++ ")) for x in replace))
    diff = list(difflib.unified_diff(lines, new, "a/f.py", "b/f.py", lineterm=""))
    hunks = [i for i, x in enumerate(diff) if x.startswith("@@")]
    ends = [*hunks[1:], len(diff)]
    for i, end in zip(hunks, ends, strict=True):
        # Each hunk's old side must be unique and non-blank, or refusal is the right answer.
        old = [x[1:] for x in diff[i + 1 : end] if x[:1] in " -"]
        assume(any(x.strip() for x in old))
        assume(sum(lines[j : j + len(old)] == old for j in range(len(lines))) == 1)
    shifted = [
        re.sub(r"^@@ -(\d+)", lambda m: f"@@ -{max(1, int(m[1]) + offset)}", x) for x in diff
    ]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.py").write_bytes(text.encode())
        result = apply_response(Path(tmp), "\n".join(shifted) + "\n", fmt="udiff")
        assert result.ok, result.feedback()
        assert (Path(tmp) / "f.py").read_text(encoding="utf-8") == "".join(x + "\n" for x in new)


VALID = (
    "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\n"
    "def add(a, b):\n    return a + b\n>>>>>>> REPLACE\n"
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a\n+    return b\n"
    "calc.py\n```python\nprint(1)\n```\n"
)
EVIL_LINES = [
    "../evil.py",
    "/tmp/evil.py",
    ".git/config",
    "link/evil.py",
    "link/../../evil.py",
    "<<<<<<< SEARCH",
    "=======",
    ">>>>>>> REPLACE",
    "```",
    "```python link/x.py",
    "@@ -1 +1 @@",
    "--- /dev/null",
    "+++ b/../evil.py",
    "+++ /dev/null",
    "...",
    "",
    "    ...",
    "\r",
    "\x00",
    "calc.py",
    "**../evil.py**",
    "~/evil.py",
    "C:\\evil.py",
    "link",
    "+evil",
    "-x",
    " x",
]


def _mutate(data: st.DataObject) -> str:
    lines = VALID.split("\n")
    for _ in range(data.draw(st.integers(1, 8))):
        op = data.draw(st.sampled_from(["insert", "delete", "replace", "dup", "noise"]))
        i = data.draw(st.integers(0, len(lines)))
        if op == "insert":
            lines.insert(i, data.draw(st.sampled_from(EVIL_LINES)))
        elif op == "delete" and i < len(lines):
            del lines[i]
        elif op == "replace" and i < len(lines):
            lines[i] = data.draw(st.sampled_from(EVIL_LINES))
        elif op == "dup" and i < len(lines):
            lines.insert(i, lines[i])
        elif op == "noise":
            lines.insert(i, data.draw(st.text(max_size=30)))
    return "\n".join(lines)


class Sandbox:
    """A repository next to an outside directory, reset between examples."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp())
        self.repo = self.base / "repo"
        self.outside = self.base / "outside"

    def reset(self) -> None:
        for child in self.base.iterdir():
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        self.repo.mkdir()
        self.outside.mkdir()
        (self.outside / "keep.txt").write_text("outside\n")
        (self.repo / ".git").mkdir()
        (self.repo / ".git" / "config").write_text("[core]\n")
        (self.repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (self.repo / "link").symlink_to(self.outside, target_is_directory=True)

    def outside_state(self) -> dict[str, bytes]:
        """Everything an edit must never touch: the outside directory, .git, the siblings."""
        state = {p.name: p.read_bytes() for p in self.outside.iterdir()}
        state["<.git/config>"] = (self.repo / ".git" / "config").read_bytes()
        state["<.git>"] = " ".join(sorted(p.name for p in (self.repo / ".git").iterdir())).encode()
        state["<base>"] = " ".join(sorted(p.name for p in self.base.iterdir())).encode()
        state["<tmp>"] = str(sorted(Path("/tmp").glob("evil*"))).encode()
        return state


@SETTINGS
@given(data=st.data())
def test_mutated_replies_never_crash_or_escape(data: st.DataObject) -> None:
    box = Sandbox()
    try:
        box.reset()
        before = box.outside_state()
        reply = data.draw(st.one_of(st.text(max_size=300), st.builds(lambda: _mutate(data))))
        for fmt in ("auto", "search_replace", "whole_file", "udiff"):
            parse_edits(reply, fmt)
        result = apply_response(box.repo, reply, protected=["calc.py"] if len(reply) % 2 else [])
        assert result.ok is (not result.failures and result.n_edits > 0)
        assert box.outside_state() == before
        for path in result.changed:
            assert not path.startswith(("..", "/", ".git")) and "link" not in path
        result.feedback()
    finally:
        shutil.rmtree(box.base)
