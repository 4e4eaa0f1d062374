"""In-memory copies of the files a reply touches, and the all-or-nothing write.

Line endings are kept as the file has them (CRLF files stay CRLF), and so is a
missing final newline. Writing goes through a temporary file beside the target and
`os.replace`; if any write fails, the files already replaced are put back.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.edits.safety import Target
from selfforge.repo.treefiles import NotReadable, read_bytes

SKIP_DIRS = {".git", ".selfforge", "node_modules", ".venv", "__pycache__"}
MAX_SIMILAR_WALK = 20_000  # files looked at when suggesting a path; big repos stay fast


@dataclass
class FileState:
    target: Target
    original: bytes | None  # None when the file does not exist
    lines: list[str] = field(default_factory=list)
    eol: str = "\n"
    final_newline: bool = True
    exists: bool = False
    unreadable: str = ""  # why the file cannot be edited as text, if it cannot
    bom: bool = False  # the file starts with a UTF-8 byte-order mark, kept on write

    @classmethod
    def read(cls, target: Target) -> FileState:
        if target.path.is_dir():
            return cls(target, None, unreadable="is a directory, not a file")
        if not target.path.exists():
            blocker = _file_in_the_way(target.path)
            if blocker is not None:
                return cls(target, None, unreadable=f"cannot be created: {blocker} is a file")
            return cls(target, None)
        if not target.path.is_file():  # a FIFO or device would block or never end
            return cls(target, None, unreadable="is not a regular file")
        try:  # resolved inside the tree already; O_NOFOLLOW and a regular file, still
            data = read_bytes(target.path.parent, target.path.name)
        except NotReadable:
            return cls(target, None, unreadable="is not a regular file")
        state = cls(target, data, exists=True)
        if b"\x00" in data:
            state.unreadable = "is a binary file; it cannot be edited as text"
            return state
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            state.unreadable = "is not UTF-8 text; it cannot be edited as text"
            return state
        if text.startswith("\ufeff"):  # a BOM is not part of the first line's code
            state.bom, text = True, text[1:]
        state.eol = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
        if state.eol == "\r\n":
            text = text.replace("\r\n", "\n")
        state.final_newline = text.endswith("\n") or text == ""
        state.lines = text.split("\n")
        if state.final_newline:
            state.lines.pop()
        return state

    def set_lines(self, lines: list[str], *, final_newline: bool | None = None) -> None:
        self.lines = list(lines)
        if final_newline is not None:
            self.final_newline = final_newline
        self.exists = True

    def delete(self) -> None:
        self.lines = []
        self.exists = False

    def render(self) -> bytes | None:
        if not self.exists:
            return None
        if not self.lines:
            return b""
        text = self.eol.join(self.lines) + (self.eol if self.final_newline else "")
        return ("\ufeff" if self.bom else "").encode("utf-8") + text.encode("utf-8")

    @property
    def changed(self) -> bool:
        return self.render() != self.original


class FileSet:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, FileState] = {}
        self._elsewhere: dict[tuple[tuple[str, ...], str], tuple[str, int] | None] = {}

    def load(self, target: Target) -> FileState:
        if target.rel not in self.files:
            self.files[target.rel] = FileState.read(target)
        return self.files[target.rel]

    def changed(self) -> list[str]:
        return sorted(rel for rel, state in self.files.items() if state.changed)

    def same_name(self, path: str) -> list[str]:
        """Existing files with the same base name, for "did you mean" hints."""
        name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        found: list[str] = []
        seen = 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            seen += len(filenames)
            for filename in sorted(filenames):
                if filename.lower() == name:
                    found.append(Path(dirpath, filename).relative_to(self.root).as_posix())
            if len(found) >= 3 or seen > MAX_SIMILAR_WALK:
                break
        return found

    def find_elsewhere(self, search: list[str], skip: str) -> tuple[str, int] | None:
        """Another file holding the SEARCH lines (the model named the wrong file)."""
        key = (tuple(search), skip)
        if key not in self._elsewhere:
            self._elsewhere[key] = self._find_elsewhere(search, skip)
        return self._elsewhere[key]

    def _find_elsewhere(self, search: list[str], skip: str) -> tuple[str, int] | None:
        from selfforge.edits.match import Miss, locate

        anchor = next((x.strip() for x in search if x.strip()), "")
        suffix = Path(skip).suffix
        seen = 0
        for path in self._walk():
            seen += 1
            if seen > MAX_SIMILAR_WALK:
                return None
            rel = path.relative_to(self.root).as_posix()
            if rel == skip or path.suffix != suffix or path.is_symlink() or not _small(path):
                continue
            if not path.is_file():  # FIFOs and devices: reading could block
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if anchor not in text:
                continue
            found = locate(text.replace("\r\n", "\n").split("\n"), search, search)
            if not isinstance(found, Miss):
                return rel, found[0].start + 1
        return None

    def _walk(self):
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for filename in sorted(filenames):
                yield Path(dirpath, filename)

    def write(self) -> None:
        """Write every changed file, or restore the ones written if any write fails."""
        states = [s for s in self.files.values() if s.changed]
        done: list[FileState] = []
        created_dirs: list[Path] = []
        try:
            for state in states:
                _write_one(state, created_dirs)
                done.append(state)
        except OSError:
            for state in reversed(done):
                _restore(state)
            for directory in reversed(created_dirs):
                with contextlib.suppress(OSError):
                    directory.rmdir()
            raise


def _file_in_the_way(path: Path) -> str | None:
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent.name
    return None


def _small(path: Path) -> bool:
    try:
        return path.stat().st_size < 512_000
    except OSError:
        return False


def _write_one(state: FileState, created_dirs: list[Path]) -> None:
    path = state.target.path
    data = state.render()
    if data is None:
        path.unlink()
        return
    _make_parents(path.parent, created_dirs)
    _atomic_write(path, data)


def _make_parents(directory: Path, created_dirs: list[Path]) -> None:
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        d.mkdir()
        created_dirs.append(d)


def _atomic_write(path: Path, data: bytes) -> None:
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".selfforge", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _restore(state: FileState) -> None:
    path = state.target.path
    with contextlib.suppress(OSError):
        if state.original is None:
            path.unlink()
        else:
            _atomic_write(path, state.original)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
