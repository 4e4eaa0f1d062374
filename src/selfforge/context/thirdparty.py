"""Which files are not the project's own: vendored, generated, or test fixtures.

A task about a project's code should find the project's files, not the copy of a
dependency it vendors (setuptools ships a dozen packages under ``_vendor/``) or a data
file its tests read. Such files stay searchable, ranked down. The project says which they
are in several places, all read here:

- directory names: ``_vendor/``, ``vendor/``, ``vendored/``, ``third_party/``,
  ``node_modules/``, ``bower_components/``, and fixture trees (``tests/data/``,
  ``testdata/``, ``fixtures/``, ``__snapshots__/``);
- ``.gitattributes`` lines marking paths ``linguist-vendored`` or ``linguist-generated``;
- the lint and test exclude lists: ruff's ``exclude``/``extend-exclude`` (ruff.toml,
  .ruff.toml, pyproject.toml), flake8's ``exclude`` (setup.cfg, tox.ini, .flake8) and
  pytest's ``norecursedirs`` (pytest.ini, setup.cfg, tox.ini, pyproject.toml).
"""

from __future__ import annotations

import configparser
import fnmatch
import functools
import itertools
import re
import tomllib
from pathlib import Path

VENDOR_DIRS = frozenset(
    {"_vendor", "vendor", "vendored", "third_party", "thirdparty", "node_modules",
     "bower_components"}
)  # fmt: skip
FIXTURE_DIRS = frozenset({"testdata", "test_data", "fixtures", "__snapshots__", "snapshots"})
# Patterns of the tools' own defaults, not a statement about this project.
_TOOL_DEFAULTS = frozenset(
    {".*", "build", "dist", "CVS", "_darcs", "{arch}", "*.egg", "venv", ".tox", ".eggs",
     ".git", "node_modules", "__pycache__", "*.egg-info"}
)  # fmt: skip


class ThirdParty:
    """``is_third_party(path)`` for repo-relative POSIX paths."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = [p for p in patterns if p and p not in _TOOL_DEFAULTS]

    def __call__(self, path: str) -> bool:
        return self.why(path) is not None

    def why(self, path: str) -> str | None:
        parts = path.split("/")
        dirs = parts[:-1]
        for part in dirs:
            if part.lower() in VENDOR_DIRS:
                return f"vendored ({part}/)"
            if part.lower() in FIXTURE_DIRS:
                return f"test fixture ({part}/)"
        for a, b in itertools.pairwise(dirs):
            if a in ("tests", "test") and b in ("data", "files", "resources"):
                return f"test fixture ({a}/{b}/)"
        for pattern in self.patterns:
            if _matches(path, pattern):
                return f"excluded by the project ({pattern})"
        return None


def third_party(root: Path) -> ThirdParty:
    """The project's statement of what is not its own code, read from its config files."""
    patterns: list[str] = []
    patterns += _gitattributes(root / ".gitattributes")
    for name in ("ruff.toml", ".ruff.toml"):
        patterns += _toml_list(root / name, ("exclude",), ("extend-exclude",))
    patterns += _toml_list(
        root / "pyproject.toml",
        ("tool", "ruff", "exclude"),
        ("tool", "ruff", "extend-exclude"),
        ("tool", "pytest", "ini_options", "norecursedirs"),
    )
    for name, sections in (
        ("setup.cfg", ("flake8", "tool:pytest")),
        ("tox.ini", ("flake8", "pytest")),
        (".flake8", ("flake8",)),
        ("pytest.ini", ("pytest",)),
    ):
        patterns += _ini_lists(root / name, sections)
    return ThirdParty(patterns)


def _matches(path: str, pattern: str) -> bool:
    pattern = pattern.strip().strip("/").removeprefix("./")
    if not pattern:
        return False
    if "/" not in pattern.replace("**/", ""):
        # A bare name (ruff, flake8, norecursedirs) matches any path component.
        name = pattern.removeprefix("**/")
        return any(fnmatch.fnmatchcase(part, name) for part in path.split("/")[:-1]) or (
            fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], name) and "*" in name
        )
    regex = fnmatch.translate(pattern.removeprefix("**/")).replace(r"\Z", "")
    return re.match(f"(?:.*/)?{regex}(?:/|$)", path) is not None


def _gitattributes(path: Path) -> list[str]:
    found = []
    for line in _read(path).splitlines():
        fields = line.split()
        if len(fields) < 2 or line.lstrip().startswith("#"):
            continue
        marks = fields[1:]
        if any(m in ("linguist-vendored", "linguist-generated", "linguist-vendored=true",
                     "linguist-generated=true") for m in marks):  # fmt: skip
            found.append(fields[0])
    return found


def _toml_list(path: Path, *keys: tuple[str, ...]) -> list[str]:
    data = _parsed_toml(_read(path))
    found: list[str] = []
    for key in keys:
        value: object = data
        for part in key:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, list):
            found += [str(v) for v in value]
        elif isinstance(value, str):
            found += value.split()
    return found


@functools.lru_cache(maxsize=8)
def _parsed_toml(text: str) -> dict[str, object]:
    """A config file's TOML, parsed once per content (every context build reads it);
    never changed by the callers."""
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def _ini_lists(path: Path, sections: tuple[str, ...]) -> list[str]:
    text = _read(path)
    if not text:
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    found: list[str] = []
    for section in sections:
        if parser.has_section(section):
            for key in ("exclude", "extend-exclude", "norecursedirs"):
                value = parser.get(section, key, fallback="")
                found += [v for v in re.split(r"[\s,]+", value) if v]
    return found


def _read(path: Path) -> str:
    """A configuration file at the tree's top, never through a symlink or a FIFO."""
    from selfforge.repo.treefiles import NotReadable, read_text

    try:
        return read_text(path.parent, path.name)
    except NotReadable:
        return ""
