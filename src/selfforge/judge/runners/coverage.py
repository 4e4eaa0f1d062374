"""Line coverage of a test run, read back from what each tool wrote: coverage.py's
summary (written by selfforge's pytest plugin), ``go test -coverprofile``, and the V8
coverage JSON that any ``node`` process writes where NODE_V8_COVERAGE points.

Python's lines come from selfforge's line probes (``inject/selfforge_line_probes.py``),
or coverage.py where a changed file was imported before the plugin. Each reader gives,
per file it was asked about, the lines the tool counts as executable
and the lines the run executed (``Lines``). What the tools wrote is hostile input (the
code under test runs in the same process, or can reach the folder): every reader is
bounded, and anything it cannot read is "not measured" (None), never an error. The judge
(``judge/coverage.py``) picks the changed lines and decides what the ratio means.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

INSIDE_DIR = "/tmp/.selfforge-coverage"  # where a sandboxed run writes it
MAX_BYTES = 64 * 1024 * 1024  # all the files of one run together
MAX_FILES = 4096


@dataclass
class Lines:
    """What one run executed of the files asked about: per repo-relative path, the lines
    the tool counts as executable and those executed (a subset)."""

    tool: str
    executable: dict[str, set[int]] = field(default_factory=dict)
    executed: dict[str, set[int]] = field(default_factory=dict)
    note: str = ""  # why nothing was measured, as the tool's side said it

    def merge(self, other: Lines | None) -> Lines:
        """Both runs' lines: executed by either (a test of either run ran it)."""
        if other is None:
            return self
        if not self.executable and other.executable:
            return other
        merged = Lines(self.tool)
        for source in (self, other):
            for path, lines in source.executable.items():
                merged.executable.setdefault(path, set()).update(lines)
            for path, lines in source.executed.items():
                merged.executed.setdefault(path, set()).update(lines)
        return merged


class TooMuch(Exception):
    """The run wrote more coverage than the bounds: none of it is read (a part could
    leave out the one file that shows a line ran)."""


def _files(out_dir: Path, pattern: str) -> list[Path]:
    """The tool's files in ``out_dir`` (regular files only), all within the bounds."""
    found, total = [], 0
    try:
        paths = sorted(out_dir.glob(pattern))
        for path in paths:
            if path.is_symlink() or not path.is_file():
                continue
            total += path.stat().st_size
            found.append(path)
    except OSError:
        return []
    if total > MAX_BYTES or len(found) > MAX_FILES:
        raise TooMuch(f"the run wrote more coverage than {MAX_BYTES >> 20} MB or {MAX_FILES} files")
    return found


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def _lines(values: object) -> set[int]:
    if not isinstance(values, list):
        return set()
    return {v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0}


# --- coverage.py (through selfforge's pytest plugin) ---------------------------------------

PYTHON_PREFIX = "python-"  # python-<pid>.json, one per pytest process
PYTHON_TOOLS = ("line probes", "coverage.py")


def read_python(out_dir: Path, tree: Path, files: list[str]) -> Lines | None:
    """The plugin's summaries: ``{"tool": ..., "files": {absolute path: {"statements":
    [...], "executed": [...]}}}``, one per pytest process (the run's, each xdist
    worker's); the tool is its line probes, or coverage.py for a file imported early."""
    wanted = {str(tree / f): f for f in files}
    found = Lines("coverage.py")
    read = False
    for path in _files(out_dir, f"{PYTHON_PREFIX}*.json"):
        data = _read_json(path)
        measured = data.get("files") if isinstance(data, dict) else None
        if isinstance(measured, dict) and data.get("tool") in PYTHON_TOOLS:
            found.tool = data["tool"]  # the last process's: each says which it used
        if isinstance(data, dict) and isinstance(data.get("note"), str):
            found.note = found.note or data["note"][:300]
        if not isinstance(measured, dict):
            continue
        read = True
        for name, lines in measured.items():
            rel = wanted.get(name)
            if rel is None or not isinstance(lines, dict):
                continue
            found.executable.setdefault(rel, set()).update(_lines(lines.get("statements")))
            found.executed.setdefault(rel, set()).update(_lines(lines.get("executed")))
    if read:
        found.note = ""
    return found if read or found.note else None


# --- go test -coverprofile ------------------------------------------------------------------

GO_PROFILE = "go.cover"
_GO_BLOCK = re.compile(r"^(.+\.go):(\d+)\.\d+,(\d+)\.\d+ (\d+) (\d+)$")


def read_go(out_dir: Path, modules: list[tuple[str, str]], files: list[str]) -> Lines | None:
    """``go test``'s profiles, merged: ``import/path/file.go:L.C,L.C statements count``
    blocks (its -coverprofile file and each test binary's copy: a command of several
    ``go test`` runs); ``modules``: (module path, folder) pairs to map import paths to
    the tree."""
    texts = []
    for profile in _files(out_dir, GO_PROFILE + "*"):
        try:
            text = profile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if text.startswith("mode:"):
            texts.append(text)
    if not texts:
        return None
    wanted = set(files)
    found = Lines("go test -coverprofile")
    for line in (x for text in texts for x in text.splitlines()[1:]):
        m = _GO_BLOCK.match(line.strip())
        if m is None:
            continue
        rel = _go_file(m.group(1), modules)
        if rel not in wanted:
            continue
        start, end, statements = int(m.group(2)), int(m.group(3)), int(m.group(4))
        if statements <= 0 or end < start or end - start > 100_000:
            continue
        span = set(range(start, end + 1))
        found.executable.setdefault(rel, set()).update(span)
        if int(m.group(5)) > 0:
            found.executed.setdefault(rel, set()).update(span)
    return found


def _go_file(name: str, modules: list[tuple[str, str]]) -> str | None:
    for module, where in modules:  # longest module path first
        if name.startswith(module + "/"):
            rest = name[len(module) + 1 :]
            return f"{where}/{rest}" if where else rest
    return None


# --- V8 (NODE_V8_COVERAGE) ------------------------------------------------------------------

_COMMENT = re.compile(r"^\s*(//|/\*|\*|\*/)")
_WORD = re.compile(r"\w")


def read_v8(out_dir: Path, tree: Path, files: list[str]) -> Lines | None:
    """The V8 coverage JSON of every node process of the run. A file's executable lines
    hold a word character outside a comment (a lone ``}`` or ``});`` does not count). A
    line where a function starts is that function's: run when it was called (its
    ``exports.f = function`` or ``const f = () =>`` head runs when the module loads,
    whatever calls it). Any other line is run when a word character of it lies in a
    range V8 counted, the innermost range covering it deciding."""
    wanted = {(tree / f).as_uri(): f for f in files}
    hits: dict[str, list[int]] = {}
    heads: dict[str, dict[int, int]] = {}  # function start offset → called (1) or not
    sources: dict[str, str] = {}
    read = False
    for path in _files(out_dir, "coverage-*.json"):
        data = _read_json(path)
        scripts = data.get("result") if isinstance(data, dict) else None
        if not isinstance(scripts, list):
            continue
        read = True
        for script in scripts:
            rel = wanted.get(script.get("url")) if isinstance(script, dict) else None
            if rel is None:
                continue
            if rel not in sources:
                try:
                    sources[rel] = (tree / rel).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
            found, starts = _v8_hits(sources[rel], script.get("functions"))
            before = hits.get(rel)
            hits[rel] = (
                found if before is None else [a or b for a, b in zip(before, found, strict=False)]
            )
            known = heads.setdefault(rel, {})
            for offset, called in starts.items():
                known[offset] = max(known.get(offset, 0), called)
    if not read:
        return None
    lines = Lines("node (V8 coverage)")
    for rel in files:
        source = sources.get(rel)
        if source is None:
            with contextlib.suppress(OSError):
                source = (tree / rel).read_text(encoding="utf-8", errors="replace")
        if source is None:
            continue
        _v8_lines(lines, rel, source, hits.get(rel), heads.get(rel, {}))
    return lines


def _v8_lines(
    lines: Lines, rel: str, source: str, hits: list[int] | None, heads: dict[int, int]
) -> None:
    executable, executed = (
        lines.executable.setdefault(rel, set()),
        lines.executed.setdefault(rel, set()),
    )
    offset = 0
    for number, text in enumerate(source.splitlines(keepends=True), start=1):
        end = offset + len(text)
        if _WORD.search(text) and not _COMMENT.match(text):
            executable.add(number)
            starting = [called for at, called in heads.items() if offset <= at < end]
            if starting:
                ran = any(starting)
            else:
                ran = hits is not None and any(
                    hits[offset + i] for i, ch in enumerate(text) if ch.isalnum() or ch == "_"
                )
            if ran:
                executed.add(number)
        offset = end


def _v8_hits(source: str, functions: object) -> tuple[list[int], dict[int, int]]:
    """Per character of ``source``: 1 where the innermost range covering it ran; and
    where each function (not the module's own) starts, with whether it was called."""
    hits = [0] * len(source)
    ranges, starts = [], {}
    for function in functions if isinstance(functions, list) else []:
        found = function.get("ranges", []) if isinstance(function, dict) else []
        for i, r in enumerate(found if isinstance(found, list) else []):
            if not isinstance(r, dict):
                continue
            start, end, count = r.get("startOffset"), r.get("endOffset"), r.get("count")
            if all(isinstance(v, int) for v in (start, end, count)) and 0 <= start < end:
                ranges.append((start, -end, count))
                if i == 0 and start > 0:
                    starts[start] = max(starts.get(start, 0), 1 if count > 0 else 0)
    for start, neg_end, count in sorted(ranges):  # outer ranges first, inner ones over them
        end = min(-neg_end, len(source))
        hits[start:end] = [1 if count > 0 else 0] * max(end - start, 0)
    return hits, starts
