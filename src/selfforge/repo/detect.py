"""What ``selfforge init`` (and a run without directives) finds in a project: its
virtualenv, its test runner and the command that runner really runs, and the lint tools
the project actually has.

- virtualenv: ``.venv``, ``venv``, ``env`` (a ``pyvenv.cfg`` beside ``bin/python``), or
  the environment poetry, hatch, pipenv or uv keep elsewhere (asked of the tool itself).
- tests: candidates in order, the first one ``init`` sees collect and run wins
  (``initialize.py``; when none does, none is written): the ``pytest`` / ``unittest``
  command of tox's ``[testenv] commands`` (its ``{tox_root}`` paths kept,
  ``{site-packages}`` parts dropped), a
  ``noxfile.py`` session, or a ``make test`` recipe, run with the project's Python;
  ``make test`` itself when its recipe is something else; then pytest or unittest from
  the project's files; then the other runners' own (go.mod's, Cargo.toml's,
  package.json's: ``languages``, the judge's runner registry, which the caller hands in).
- lint: ruff, then flake8, when installed in the project's virtualenv or
  ``node_modules/.bin``, or configured in the project and on the project's PATH.
- tools are looked up in the project's environment: its virtualenv, its
  ``node_modules/.bin``, then PATH without selfforge's own interpreter's bin folder (a
  tool only selfforge's venv has is not the project's, and an MCP client or CI job that
  starts selfforge with another PATH would not find it).
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from selfforge.repo.testpaths import DEFAULT_PYTHON_FILES

_RUNNER_TIMEOUT_S = 20
_PYTEST = re.compile(
    r"(?:^|\s)(?:\S*/)?(?:python3?\s+-m\s+)?(?:coverage\s+run\s+-m\s+)?(pytest|py\.test)\b(?P<args>.*)"
)
# Options of plugins a judge's run goes without (coverage, xdist): with a value of their
# own (``--cov-report term-missing``), or in one word (``--cov=pkg``, ``-n4``, flags).
_PLUGIN_VALUE_OPTIONS = frozenset(
    ("--cov", "--cov-report", "--cov-config", "--cov-fail-under", "--cov-context",
     "-n", "--numprocesses", "--maxprocesses", "--dist")
)  # fmt: skip
_DROPPED_ARGS = re.compile(
    r"^(--cov\S*|--no-cov\S*|-n\s*(\d+|auto|logical)|--numprocesses=\S*|--maxprocesses=\S*"
    r"|--dist=\S*)$"
)
# pytest's options whose value is the next word (what goes when that value is dropped)
_PYTEST_VALUE_OPTIONS = frozenset(
    ("--basetemp", "--junitxml", "--junit-xml", "--rootdir", "-c", "--confcutdir",
     "--log-file", "--html", "--report-log", "-o", "--override-ini", "-p", "--ignore",
     "--deselect", "--ignore-glob", "--cache-dir")
)  # fmt: skip
_SUBSTITUTION = re.compile(r"\{[^{}]*\}")  # tox's {envtmpdir}, {[testenv]deps}, …
_POSARGS = re.compile(r"\{posargs(?::([^{}]*))?\}")
# tox's substitutions for the project's folder: a path under it is kept, relative
_TOX_ROOT = re.compile(r"^\{(?:tox_root|toxinidir)\}/?")
ENV_FOLDERS = (".venv", "venv", "node_modules", "target", "__pycache__", ".tox")


class LanguageFound(Protocol):
    """What a runner's detection found (``judge.runners.base.Found``)."""

    runner: str
    test: str
    source: str
    junit: str | None
    lint: str | None
    results: str


# The runners beyond Python's, asked in order (``judge.runners.registry.init_found``).
Languages = Callable[[Path], LanguageFound | None]


@dataclass(frozen=True)
class Candidate:
    """One test command ``init`` may write, and who reads its results."""

    runner: str
    test: str
    source: str  # where it came from, in words
    results: str = "auto"
    junit: str | None = None


@dataclass
class Project:
    root: Path
    venv: Path | None = None  # the virtualenv's folder
    venv_kind: str = ""  # ".venv", "poetry", "hatch", "pipenv", "uv", …
    python: str = "python"  # how a check command starts the project's Python
    runner: str = ""  # tox, nox, make, or a runner of judge/runners/registry.py
    results: str = "auto"  # [checks] runner: who reads the per-test results
    junit: str | None = None  # [checks] junit: the report file, for the JUnit runner
    test: str | None = None
    test_source: str = ""  # where the test command came from, in words
    lint: str | None = None
    lint_tools: list[str] = field(default_factory=list)  # installed for this project
    lint_source: str = ""
    candidates: list[Candidate] = field(default_factory=list)  # best first

    def use(self, found: Candidate | None) -> None:
        """Make ``found`` the project's test command (None: no test command)."""
        if found is None:
            self.runner, self.test, self.test_source = "", None, ""
            self.results, self.junit = "auto", None
            return
        self.runner, self.test, self.test_source = found.runner, found.test, found.source
        self.results, self.junit = found.results, found.junit


def detect_project(root: Path, portable: bool = False, *, languages: Languages) -> Project:
    """``portable``: commands for a shared file (no paths into this machine's installs);
    ``languages``: the other runners' detection (``registry.init_found``)."""
    project = Project(root)
    _find_venv(project, portable)
    _find_tests(project, languages)
    project.use(project.candidates[0] if project.candidates else None)
    _find_lint(project, portable)
    return project


def own_bin_folders() -> set[Path]:
    """selfforge's own interpreter's bin folders, when it runs from a virtualenv of its
    own (a system Python's bin folder is the system's, and stays)."""
    if sys.prefix == sys.base_prefix:
        return set()
    return {Path(sys.executable).parent.resolve(), (Path(sys.prefix) / "bin").resolve()}


def project_path(p: Project) -> str:
    """PATH as the project sees it: without selfforge's own bin folder, unless the
    project's virtualenv is selfforge's."""
    if p.venv is not None and p.venv.resolve() == Path(sys.prefix).resolve():
        return path_without_own(set())
    return path_without_own()


def path_without_own(own: set[Path] | None = None) -> str:
    """PATH without selfforge's own bin folders (or those given): what a project with
    no virtualenv of its own sees."""
    own = own_bin_folders() if own is None else own
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and Path(e).resolve() not in own)


def which(p: Project, tool: str) -> str | None:
    return shutil.which(tool, path=project_path(p))


# --- the virtualenv -------------------------------------------------------------------


def _find_venv(p: Project, portable: bool) -> None:
    for name in (".venv", "venv", "env", ".env"):
        if _is_venv(p.root / name):
            p.venv, p.venv_kind, p.python = p.root / name, name, f"{name}/bin/python"
            return
    pyproject = _pyproject(p.root)
    tools = pyproject.get("tool", {})
    asks = []
    if (p.root / "poetry.lock").exists() or "poetry" in tools:
        asks.append(("poetry", ["poetry", "env", "info", "-p"], "poetry run python"))
    if "hatch" in tools or (p.root / "hatch.toml").exists():
        asks.append(("hatch", ["hatch", "env", "find"], "hatch run python"))
    if (p.root / "Pipfile").exists():
        asks.append(("pipenv", ["pipenv", "--venv"], "pipenv run python"))
    if (p.root / "uv.lock").exists() and os.environ.get("UV_PROJECT_ENVIRONMENT"):
        found = Path(os.environ["UV_PROJECT_ENVIRONMENT"])
        if _is_venv(found):
            p.venv, p.venv_kind, p.python = found, "uv", "uv run python"
            return
    for kind, argv, runner in asks:
        if shutil.which(argv[0]) is None:
            continue
        try:
            out = subprocess.run(
                argv, cwd=p.root, capture_output=True, text=True, timeout=_RUNNER_TIMEOUT_S
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in out.splitlines():
            if line.strip() and _is_venv(Path(line.strip())):
                p.venv, p.venv_kind = Path(line.strip()), kind
                p.python = runner if portable else shlex.quote(str(p.venv / "bin" / "python"))
                return
    p.python = "python" if which(p, "python") else "python3"


def _is_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() and (path / "bin" / "python").exists()


def _has_module(p: Project, module: str) -> bool:
    """Is ``module`` installed in the project's virtualenv?"""
    if p.venv is None:
        return False
    return (
        any(p.venv.glob(f"lib/python*/site-packages/{module}"))
        or (p.venv / "bin" / module).exists()
    )


# --- the tests ------------------------------------------------------------------------


def _find_tests(p: Project, languages: Languages) -> None:
    """Every test command the project gives, best first."""
    found: list[Candidate] = []
    for finder in (_from_tox, _from_nox, _from_make):
        found += finder(p)
    if any(c.test.startswith(f"{p.python} -m pytest") for c in found) or _uses_pytest(p.root):
        source = "pytest signs in the project" if _uses_pytest(p.root) else "plain pytest"
        found.append(Candidate("pytest", f"{p.python} -m pytest -q", source))
    elif _uses_unittest(p.root):
        unittest = not (p.venv is not None and _has_module(p, "pytest"))
        command = f"{p.python} -m {'unittest -v' if unittest else 'pytest -q'}"
        found.append(
            Candidate("unittest" if unittest else "pytest", command, "unittest test files")
        )
    found += _other_language(p, languages)
    seen: set[str] = set()
    p.candidates = [c for c in found if not (c.test in seen or seen.add(c.test))]


def _other_language(p: Project, languages: Languages) -> list[Candidate]:
    found = languages(p.root)
    if found is None:
        return []
    if found.lint and which(p, found.lint.split()[0]):
        p.lint, p.lint_source = found.lint, f"{found.runner}'s own checker"
    return [Candidate(found.runner, found.test, found.source, found.results, found.junit)]


def _pytest_command(p: Project, line: str) -> str | None:
    """``pytest ARGS`` (in any spelling) as the project's Python runs it."""
    m = _PYTEST.search(line)
    if not m:
        return None
    try:  # tox's {posargs:DEFAULT}: the default arguments, as tox runs with none given
        words = shlex.split(_POSARGS.sub(lambda d: d[1] or "", m["args"]))
    except ValueError:
        words = []
    args = _pytest_args(words)
    if "-q" not in args and "-v" not in args:
        args.insert(0, "-q")
    return " ".join([p.python, "-m", "pytest", *map(shlex.quote, args)])


def _pytest_args(words: list[str]) -> list[str]:
    """pytest's arguments as a tox, nox or make command gives them, for a run of the
    judge's: {tox_root} paths made relative; the options of coverage and xdist dropped
    with their values (``--cov-report term-missing``, ``-n 4``); a word holding another
    tox substitution (``--basetemp={envtmpdir}``, ``{envsitepackagesdir}/pkg``) or a
    shell variable dropped, with the option it is the value of."""
    args: list[str] = []
    rest = iter(words)
    for given in rest:
        word = _TOX_ROOT.sub("", given) or "." if _TOX_ROOT.match(given) else given
        if word in _PLUGIN_VALUE_OPTIONS:  # its value too, when one follows
            value = next(rest, None)
            if value is not None and value.startswith("-"):
                args += _pytest_args([value, *rest])
                break
            continue
        if _DROPPED_ARGS.match(word):
            continue
        if _SUBSTITUTION.search(word) or word.startswith("$"):
            if args and args[-1] in _PYTEST_VALUE_OPTIONS:
                args.pop()  # --basetemp {envtmpdir}: the option goes with its value
            continue
        args.append(word)
    return args


def _from_tox(p: Project) -> list[Candidate]:
    parser = configparser.ConfigParser(interpolation=None)
    for name, section in (("tox.ini", "testenv"), ("setup.cfg", "testenv")):
        path = p.root / name
        if not path.exists():
            continue
        try:
            parser.read(path, encoding="utf-8")
        except configparser.Error:
            continue
        commands = parser.get(section, "commands", fallback="")
        for line in commands.splitlines():
            if command := _pytest_command(p, line):
                return [Candidate("tox", command, f"{name} [{section}] commands")]
    return []


def _from_nox(p: Project) -> list[Candidate]:
    path = p.root / "noxfile.py"
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"session\.run\(\s*((?:[\"'][^\"']*[\"']\s*,?\s*)+)", text)
    if not m:
        return []
    words = re.findall(r"[\"']([^\"']*)[\"']", m[1])
    command = _pytest_command(p, " ".join(words))
    return [Candidate("nox", command, "noxfile.py session.run(...)")] if command else []


def _from_make(p: Project) -> list[Candidate]:
    path = next(
        (p.root / n for n in ("Makefile", "makefile", "GNUmakefile") if (p.root / n).exists()), None
    )
    if path is None:
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"^test\s*:[^\n]*\n((?:\t[^\n]*\n?)*)", text, re.M)
    if not m:
        return []
    recipe = [line.strip().lstrip("@-") for line in m[1].splitlines() if line.strip()]
    if len(recipe) == 1 and (command := _pytest_command(p, recipe[0])):
        return [Candidate("make", command, f"the recipe of `make test` in {path.name}")]
    return [Candidate("make", "make test", f"the `test` target of {path.name}")]


def _uses_pytest(root: Path) -> bool:
    if (root / "pytest.ini").exists() or (root / "conftest.py").exists():
        return True
    if "pytest" in _pyproject(root).get("tool", {}):
        return True
    for folder in ("tests", "test"):
        if (root / folder).is_dir() and any((root / folder).rglob("test*.py")):
            return not _uses_unittest(root)
    modules = any(any(root.glob(pattern)) for pattern in DEFAULT_PYTHON_FILES)
    return modules and not _uses_unittest(root)


def _uses_unittest(root: Path) -> bool:
    files = [*root.glob("test*.py"), *root.glob("tests/test*.py"), *root.glob("test/test*.py")]
    texts = [f.read_text(encoding="utf-8", errors="replace") for f in files[:20]]
    return bool(texts) and all("unittest" in t and "pytest" not in t for t in texts)


# --- lint -----------------------------------------------------------------------------

_LINTERS = {  # tool: its arguments, in order of preference
    "ruff": "check --output-format concise .",
    "flake8": ".",
}


def _find_lint(p: Project, portable: bool) -> None:
    for tool, args in _LINTERS.items():
        exe = _venv_tool(p, tool, portable)
        if exe:
            source = f"installed in {p.venv_kind}"
        elif (p.root / "node_modules" / ".bin" / tool).exists():
            exe, source = f"node_modules/.bin/{tool}", "installed in node_modules"
        elif _configured(p.root, tool) and which(p, tool):
            exe, source = tool, "configured in the project and on its PATH"
        else:
            continue
        p.lint_tools.append(tool)
        if p.lint is None:
            p.lint, p.lint_source = f"{exe} {args}", source


def _venv_tool(p: Project, tool: str, portable: bool) -> str | None:
    if p.venv is None or not (p.venv / "bin" / tool).exists():
        return None
    if p.venv.parent == p.root:  # relative: checks anchor it to the checkout
        return f"{p.venv.name}/bin/{tool}"
    if portable and p.python.endswith(" run python"):
        return p.python.removesuffix("python") + tool  # "poetry run ruff"
    return shlex.quote(str(p.venv / "bin" / tool))


def _configured(root: Path, tool: str) -> bool:
    if tool == "ruff":
        return (
            (root / "ruff.toml").exists()
            or (root / ".ruff.toml").exists()
            or "ruff" in _pyproject(root).get("tool", {})
        )
    if tool == "flake8":
        if (root / ".flake8").exists():
            return True
        for name in ("setup.cfg", "tox.ini"):
            path = root / name
            if path.exists() and "[flake8]" in path.read_text(encoding="utf-8", errors="replace"):
                return True
    return False


def _pyproject(root: Path) -> dict[str, Any]:
    path = root / "pyproject.toml"
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return {}
