"""The one rule for what a test file is, read from the project's pytest configuration.

``python_files`` (default ``test_*.py *_test.py``) names test modules anywhere in the
tree; ``testpaths`` and folders named ``tests``/``test``/``testing`` hold test code
(helpers and fixtures included), unless a ``testpaths`` entry is the code's own package
or ``src`` (pytest is told to look for tests inside the code); ``conftest.py`` is test
code wherever it is, and so is a Rust test module in its own file (``src/tests.rs``).
Every gate, the blast radius and retrieval use this rule.
"""

from __future__ import annotations

import configparser
import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")
TEST_FOLDERS = frozenset({"tests", "test", "testing", "__tests__"})
# Other languages' conventions, for retrieval and the blast radius: foo.test.js, x_test.go.
_OTHER_TEST_MARKS = (".test.", ".spec.")
_OTHER_TEST_SUFFIXES = ("_test.go",)
CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


@dataclass(frozen=True)
class TestRule:
    python_files: tuple[str, ...] = DEFAULT_PYTHON_FILES
    testpaths: tuple[str, ...] = ()

    def is_test_file(self, path: str) -> bool:
        """A module pytest would collect tests from."""
        name = PurePosixPath(path).name
        return name.endswith(".py") and any(fnmatch.fnmatch(name, p) for p in self.python_files)

    def is_test_path(self, path: str) -> bool:
        """Test code: test modules, conftest.py, and anything in a test folder."""
        pure = PurePosixPath(path)
        if self.is_test_file(path) or pure.name == "conftest.py":
            return True
        if any(m in pure.name for m in _OTHER_TEST_MARKS) or pure.name.endswith(
            _OTHER_TEST_SUFFIXES
        ):
            return True
        if any(part in TEST_FOLDERS for part in pure.parts[:-1]) or is_rust_test_module(path):
            return True
        return any(pure.is_relative_to(t) for t in self.testpaths if t not in ("", "."))


DEFAULT = TestRule()
# A crate's test module in a file of its own (``#[cfg(test)] mod tests;`` in lib.rs or a
# module: ``src/tests.rs``, ``src/parser/tests.rs``, ``src/parser/tests/mod.rs`` and
# what it holds): by the Rust convention, these names hold only tests.
RUST_TEST_MODULES = frozenset({"test.rs", "tests.rs"})


def is_rust_test_module(path: str) -> bool:
    """A Rust source named as a test module (``tests.rs``/``test.rs``), or one inside a
    ``tests/`` folder below the crate's ``src`` (a test module's own folder)."""
    pure = PurePosixPath(path)
    if pure.suffix != ".rs":
        return False
    return pure.name in RUST_TEST_MODULES or (
        "src" in pure.parts[:-1] and any(p in TEST_FOLDERS for p in pure.parts[:-1])
    )


def is_test_path(path: str) -> bool:
    """The default rule, for callers that have no tree at hand."""
    return DEFAULT.is_test_path(path)


def rule_for(root: Path) -> TestRule:
    """The rule from ``root``'s pytest configuration (the first file that has one)."""
    for name in CONFIG_FILES:
        settings = _pytest_settings(root / name)
        if settings is None:
            continue
        files = _words(settings.get("python_files")) or list(DEFAULT_PYTHON_FILES)
        paths = [p.strip("/").removeprefix("./") for p in _words(settings.get("testpaths"))]
        return TestRule(tuple(files), tuple(p for p in paths if _holds_tests_only(root, p)))
    return DEFAULT


CODE_FOLDERS = frozenset({"src", "lib"})


def _holds_tests_only(root: Path, folder: str) -> bool:
    """Is a ``testpaths`` folder test code as a whole? Not the code's own package or
    ``src`` that a project lists so that pytest finds the tests inside it (toolz lists
    ``toolz``): there only the test modules and test folders are tests, or every fix to
    the code would be a test edit."""
    name = PurePosixPath(folder).name
    if "test" in name.lower() or "spec" in name.lower():
        return True
    return name not in CODE_FOLDERS and not (root / folder / "__init__.py").is_file()


def _words(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        return value.split()
    return []


# The sections pytest reads in each ini-style file.
PYTEST_SECTIONS = {
    "pytest.ini": ("pytest",),
    ".pytest.ini": ("pytest",),
    "tox.ini": ("pytest",),
    "setup.cfg": ("tool:pytest",),
}


def pytest_settings(name: str, text: str | None) -> object:
    """pytest's settings in one configuration file's text (the one reader: the test rule
    here, the integrity gate's comparison of two versions): pyproject.toml's
    ``[tool.pytest]`` table, an ini file's pytest sections by name; None without the
    text, ``"unparsable"`` for a file that does not parse."""
    if text is None:
        return None
    if name == "pyproject.toml":
        try:
            return tomllib.loads(text).get("tool", {}).get("pytest")
        except tomllib.TOMLDecodeError:
            return "unparsable"
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return "unparsable"
    return {s: dict(parser[s]) for s in PYTEST_SECTIONS.get(name, ()) if parser.has_section(s)}


def _pytest_settings(path: Path) -> dict[str, object] | None:
    """The ini options of one configuration file, when it has pytest's."""
    if not path.is_file():
        return None
    found = pytest_settings(path.name, path.read_text(encoding="utf-8", errors="replace"))
    if path.name == "pyproject.toml":
        options = found.get("ini_options") if isinstance(found, dict) else None
        return options if isinstance(options, dict) else None
    sections = list(found.values()) if isinstance(found, dict) else []
    return sections[0] if sections else None
