"""Directives: ``selfforge.toml`` or ``[tool.selfforge]`` in ``pyproject.toml`` (DESIGN.md §4).

Everything is validated by pydantic with unknown keys forbidden; any problem becomes one
``ConfigError`` line naming the file, the line and the key, and how to fix it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from selfforge.errors import ConfigError
from selfforge.models.base import ROLES

DIRECTIVES_FILE = "selfforge.toml"
# Never a candidate's to change, whatever the directives say: git's own settings in the
# tree (attributes can blind a diff, modules and nested repositories bring code from
# elsewhere) and the directives file. pyproject.toml's [tool.selfforge] table is guarded
# by the directives gate (judge/rules/tree_safety.py): the rest of pyproject.toml is not.
ALWAYS_PROTECTED = (DIRECTIVES_FILE, ".gitattributes", ".gitmodules", ".git")
DEFAULT_PROTECTED = [".github/**", ".ci/**", ".gitlab-ci.yml"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Goals(_Section):
    items: list[str] = Field(default_factory=list)  # in priority order, most important first
    # goal text -> the measures that judge it: an item written as a table
    # ``{ text = "Make dedupe faster", measure = "dedupe" }`` (or ``run --measure``)
    measured: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _tables(cls, data: Any) -> Any:
        """Items are strings, or tables ``{text, measure}`` (measure: a name or a list)."""
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            return data
        items: list[object] = []
        measured = dict(data.get("measured") or {})
        for item in data["items"]:
            if not isinstance(item, dict):
                items.append(item)
                continue
            unknown = sorted(set(item) - {"text", "measure"})
            if unknown:
                raise ValueError(f"a goal table takes `text` and `measure`, not {unknown}")
            text, names = item.get("text"), item.get("measure", [])
            if not isinstance(text, str) or not text.strip():
                raise ValueError("a goal table needs `text`: what to do")
            names = [names] if isinstance(names, str) else names
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"goal {text!r}: `measure` is a measure's name or a list")
            items.append(text)
            if names:
                measured[text] = names
        return {**data, "items": items, "measured": measured}

    def measures_for(self, task: str) -> list[str]:
        """The measures that judge ``task``: its goal's, when it is a measured goal's
        text; with one goal, that goal's for every task (the planner's tasks serve it)."""
        if task in self.measured:
            return list(self.measured[task])
        if len(self.items) == 1:
            return list(self.measured.get(self.items[0], []))
        return []


class Checks(_Section):
    test: str | None = None
    # "required": no run without a test command that reports per-test results; "none":
    # the user's explicit opt-out (a warning on every run, changes go to branches only)
    tests: Literal["required", "none"] = "required"
    # which runner reads the per-test results; "auto" tells from the command and project.
    # The runners are the judge's registry's (judge/runners/registry.py): a name it does
    # not know is refused where the checks are set up (run/engine.check_space), with the
    # names it knows.
    runner: str = Field(default="auto", pattern=r"^[a-z][a-z0-9_-]*$")
    junit: str | None = None  # the JUnit XML report file the command writes, for a runner
    # that reads one (the JUnit runner requires it)
    # installs dependencies once per set of manifests, with the network, from the base's
    # files only (npm ci, go mod download, cargo fetch); checks see the result read-only
    setup: str | None = None
    lint: str | None = None
    syntax: bool = True
    timeout_s: float = Field(default=300, gt=0)
    # reruns of changed outcomes, to tell flaky tests (a failure that would reject: until
    # its outcome changes, judge/flaky.FAILURE_RERUNS at most); 0: none
    reruns: int = Field(default=1, ge=0)
    env: list[str] = Field(default_factory=list)  # variables passed into checks (never keys)
    # nested modules and workspace members judged with their own suites: "auto" (found
    # by the runner: go.mod, crates, npm workspaces, Python packages), "none", or folders
    modules: Literal["auto", "none"] | list[str] = "auto"

    @field_validator("modules")
    @classmethod
    def _module_folders(cls, value: str | list[str]) -> str | list[str]:
        for folder in value if isinstance(value, list) else ():
            parts = folder.replace("\\", "/").split("/")
            if not folder.strip() or folder.startswith("/") or ".." in parts:
                raise ValueError(
                    f"{folder!r} is no folder inside the repository; name module folders "
                    'relative to its root ("arc", "packages/a"), or say "auto" or "none"'
                )
        return value

    @field_validator("env")
    @classmethod
    def _no_keys(cls, value: list[str]) -> list[str]:
        return _no_secret_names(value)


class Limits(_Section):
    cycles: int = Field(default=10, ge=1)
    max_repairs: int = Field(default=2, ge=0)
    budget_usd: float | None = Field(default=None, ge=0)
    budget_tokens: int | None = Field(default=None, ge=0)
    stall_after: int = Field(default=3, ge=1)  # rejections in a row before changing strategy


ROLE_NAMES = ROLES  # the one registry: models/base.py


class RoleGeneration(_Section):
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)


class ModelSettings(_Section):
    spec: str | None = None
    # None: the catalog's for the model (see models/catalog.toml); per_role wins over both.
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    per_role: dict[str, RoleGeneration] = Field(default_factory=dict)

    @field_validator("per_role")
    @classmethod
    def _known_per_role(cls, value: dict[str, RoleGeneration]) -> dict[str, RoleGeneration]:
        unknown = [r for r in value if r not in ROLE_NAMES]
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; roles are {list(ROLE_NAMES)}")
        return value

    requests_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float | None = Field(default=None, gt=0)  # None: the catalog's, per provider
    max_retries: int | None = Field(default=None, ge=0)  # None: the catalog's [retry]
    edit_format: Literal["auto", "search_replace", "whole_file", "udiff"] = "auto"
    # Who proposes: one call that answers with edits, or an agent loop that runs commands
    # in the sandbox before it edits (propose/explore.py; docs/guides/explore.md). A name
    # of propose/registry.py, checked there when a run picks its proposer.
    proposer: str = "oneshot"
    explore_steps: int = Field(default=30, ge=1)  # model replies per round of exploring
    explore_seconds: float = Field(default=900, gt=0)  # wall time per round of exploring
    explore_command_s: float = Field(default=60, gt=0)  # one command's timeout
    # An outside coding agent as the proposer, run in the proposer sandbox: mini, aider,
    # claude, codex, gemini or "cmd:COMMAND" (propose/agents.py; docs/guides/agents.md).
    agent: str | None = None
    agent_model: str | None = None  # the agent's model spec; None: the run's, else its own
    agent_seconds: float = Field(default=1800, gt=0)  # wall time of one agent run


class Roles(_Section):
    enabled: list[str] = Field(default_factory=lambda: list(ROLES))
    reviewers: list[str] = Field(default_factory=lambda: ["correctness"])
    quorum: int = Field(default=1, ge=1)

    @field_validator("enabled")
    @classmethod
    def _known_roles(cls, value: list[str]) -> list[str]:
        unknown = [r for r in value if r not in ROLE_NAMES]
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; roles are {list(ROLE_NAMES)}")
        if "propose" not in value:
            raise ValueError('"propose" is required in enabled roles')
        return value


class Land(_Section):
    mode: Literal["merge", "branch"] = "merge"


class Safety(_Section):
    protected: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED))
    allow_test_edits: bool = False  # no effect since the test contract; warns when set
    # manifests and lockfiles (package.json dependencies, go.mod, Cargo.toml, lockfiles)
    allow_dependency_changes: bool = False


class Sandbox(_Section):
    mode: Literal["bwrap", "off"] = "bwrap"  # "off" only by explicit choice; warns each run
    network: bool = False
    memory_mb: int = Field(default=4096, ge=64)
    processes: int = Field(default=256, ge=8)
    output_kb: int = Field(default=1024, ge=16)
    tmp_mb: int = Field(default=1024, ge=16)
    disk_mb: int = Field(default=2048, ge=16)  # what a check may add to the tree
    env: list[str] = Field(default_factory=list)  # extra variables passed into checks
    readable: list[str] = Field(default_factory=list)  # extra host paths shown read-only
    # extra host folders no check sees, whatever else shows them (bench: the source
    # repository, whose history holds the fix)
    hidden: list[str] = Field(default_factory=list)

    @field_validator("env")
    @classmethod
    def _no_keys(cls, value: list[str]) -> list[str]:
        return _no_secret_names(value)


# The built-in kinds of measure (measure/kinds.py reads each one's output): "command"
# prints the number itself (its last number on stdout, or `key` of its JSON).
MeasureKind = Literal[
    "command",
    "pytest-benchmark",
    "go-bench",
    "cargo-bench",
    "coverage",
    "lint",
    "size",
    "instructions",
]
MEASURE_KINDS: tuple[str, ...] = get_args(MeasureKind)


class Measure(_Section):
    """One ``[[measures]]`` table: a number a change may improve or make worse, read
    from a command run on a worktree in the check sandbox (docs/directives.md)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)
    kind: MeasureKind = "command"
    # what runs: for "command" required; for the other kinds a default (measure/kinds.py)
    command: str | None = None
    # "command": a dotted key of the JSON the command prints (else its last number);
    # "pytest-benchmark", "go-bench", "cargo-bench": which benchmark (default: all, summed)
    key: str | None = None
    # which figure of the kind: pytest-benchmark min|mean|median (default median);
    # go-bench ns/op|B/op|allocs/op (default ns/op)
    metric: str | None = None
    file: str | None = None  # "size": the built file(s), a glob relative to the tree
    # default: the kind's (lower; coverage: higher)
    better: Literal["lower", "higher"] | None = None
    min_change: float = Field(default=0.05, gt=0, lt=10)  # relative: 0.05 is 5 %
    unit: str | None = None  # default: the kind's (ns, bytes, %, findings, instructions)
    on_worse: Literal["review", "reject", "report"] = "review"  # what `check` makes of worse
    max_runs: int = Field(default=30, ge=1, le=1000)  # runs per side at most (A..B)
    max_seconds: float = Field(default=300, gt=0)  # wall time of one A..B comparison at most
    timeout_s: float | None = Field(default=None, gt=0)  # one run's; default [checks] timeout_s
    # more files the measure runs (data, configuration): protected like the command's
    # script, and measured in the base's version whatever a change does to them
    files: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # variables the command gets
    # held-out variations: each table's variables are passed at measuring time only
    # ("random": a number drawn then); a goal's gain must hold on each of them too
    heldout: list[dict[str, str]] = Field(default_factory=list)

    @field_validator("heldout", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @field_validator("command")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the command is empty; give the command that prints the number")
        return value


def _no_secret_names(value: list[str]) -> list[str]:
    from selfforge.models.secrets import is_secret_name

    secret = [n for n in value if is_secret_name(n) or n in _NEVER_PASSED]
    if secret:
        raise ValueError(f"{secret} would hand credentials to candidate code; remove them")
    return value


_NEVER_PASSED = {"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DATABASE_URL", "AWS_ACCESS_KEY_ID"}


class Directives(_Section):
    goals: Goals = Field(default_factory=Goals)
    checks: Checks = Field(default_factory=Checks)
    limits: Limits = Field(default_factory=Limits)
    model: ModelSettings = Field(default_factory=ModelSettings)
    roles: Roles = Field(default_factory=Roles)
    land: Land = Field(default_factory=Land)
    safety: Safety = Field(default_factory=Safety)
    sandbox: Sandbox = Field(default_factory=Sandbox)
    measures: list[Measure] = Field(default_factory=list)  # [[measures]] tables

    @field_validator("measures")
    @classmethod
    def _measures_whole(cls, value: list[Measure]) -> list[Measure]:
        names = [m.name for m in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"measure name(s) {twice} used twice; give each measure its own name")
        for m in value:
            if m.kind == "command" and m.command is None:
                raise ValueError(
                    f"measure {m.name!r} has no command: give `command` (it prints the "
                    "number) or a built-in `kind`"
                )
            if any(not h for h in m.heldout):
                raise ValueError(f"measure {m.name!r}: a heldout table names no variable")
            if m.kind == "size" and not m.file:
                raise ValueError(
                    f"measure {m.name!r} of kind size has no `file`: name the built file "
                    "(a glob, e.g. dist/*.whl)"
                )
        return value

    @model_validator(mode="after")
    def _goal_measures_declared(self) -> Directives:
        declared = {m.name for m in self.measures}
        for text, names in self.goals.measured.items():
            unknown = [n for n in names if n not in declared]
            if unknown:
                raise ValueError(
                    f"goal {text!r} names measure {unknown[0]!r}, which no [[measures]] "
                    f"table declares ({', '.join(sorted(declared)) or 'none is declared'})"
                )
        return self

    def role_enabled(self, role: str) -> bool:
        return role in self.roles.enabled


class LoadedDirectives(BaseModel):
    """Directives plus where they came from (None when no file exists)."""

    directives: Directives
    path: Path | None = None
    text: str = ""

    def where(self, *key: str) -> str:
        """Where ``key`` ("model", "proposer") is written, for messages: file:line."""
        if self.path is None:
            return DIRECTIVES_FILE
        prefix = ("tool", "selfforge") if self.path.name == "pyproject.toml" else ()
        line = _line_of(self.text, (*prefix, *key))
        return f"{self.path}:{line}" if line else str(self.path)

    @property
    def protected(self) -> list[str]:
        """Protected globs: the directives' own, ALWAYS_PROTECTED (selfforge.toml even when
        pyproject holds the directives, or none exist: it would take over), and the files
        the check commands run (a script, a Makefile): the judge's own code."""
        checks = self.directives.checks
        return [
            *self.directives.safety.protected,
            *ALWAYS_PROTECTED,
            *_command_files(checks.test),
            *_command_files(checks.lint),
            *measure_files(self.directives),
        ]


def measure_files(d: Directives) -> list[str]:
    """The files the declared measures run (the script their command names, their
    ``files``): a change must not move the ruler it is measured by."""
    found: list[str] = []
    for m in d.measures:
        named = [*_command_files(m.command), *_paths_named(m.command), *m.files]
        found += [f for f in named if f not in found]
    return found


_PATHLIKE = re.compile(
    r"^(?![-/$~.])[\w.@+-]*(/[\w.@+-]+)*"
    r"\.(py|sh|bash|js|mjs|ts|go|rs|rb|json|csv|tsv|txt|toml|yaml|yml|ini|cfg|dat|bin)$"
)


def _paths_named(command: str | None) -> list[str]:
    """The relative paths a command names (``bench/dedupe.py``, ``data/in.csv``), past
    its program: what it likely reads or runs."""
    words = [w.strip("'\"").removeprefix("./") for w in (command or "").split()[1:]]
    return [w.rstrip("/") for w in words if "=" not in w and _PATHLIKE.match(w)]


_SCRIPT_SUFFIXES = (".sh", ".py", ".bash")
_RUNNER_FILES = {
    "make": ["Makefile", "makefile", "GNUmakefile"],
    "tox": ["tox.ini"],
    "nox": ["noxfile.py"],
}


def _command_files(command: str | None) -> list[str]:
    """Repository files a check command executes: ``sh run_tests.sh``, ``make test``…

    Only what runs: each segment's program, or the script an interpreter is given."""
    files: list[str] = []
    for segment in re.split(r"&&|\|\||[;|]", command or ""):
        words = [w.strip("'\"") for w in segment.split()]
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):  # VAR=value prefixes
            words.pop(0)
        if not words:
            continue
        program = words[0]
        files += _RUNNER_FILES.get(Path(program).name, [])
        if program in ("sh", "bash", "python", "python3") and len(words) > 1:
            program = words[1]
        if program.endswith(_SCRIPT_SUFFIXES) and not program.startswith(("/", "-")):
            files.append(program.removeprefix("./"))
    return files


def find_directives(repo: Path) -> Path | None:
    """The directives file for ``repo``: selfforge.toml, else pyproject.toml with a table."""
    own = repo / DIRECTIVES_FILE
    if own.is_file():
        return own
    pyproject = repo / "pyproject.toml"
    if pyproject.is_file() and re.search(r"^\[tool\.selfforge", pyproject.read_text(), re.M):
        return pyproject
    return None


def load_directives(repo: Path) -> LoadedDirectives:
    path = find_directives(repo)
    if path is None:
        return LoadedDirectives(directives=Directives())
    text = path.read_text(encoding="utf-8")
    return LoadedDirectives(directives=parse_directives(text, path), path=path, text=text)


def parse_directives(text: str, path: Path) -> Directives:
    """Parse directives text; ``path`` names the file in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: TOML syntax error: {exc}; fix the line it names") from None
    prefix: tuple[str, ...] = ()
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("selfforge", {})
        prefix = ("tool", "selfforge")
    try:
        return Directives.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, text, path, prefix)) from None


def _describe(exc: ValidationError, text: str, path: Path, prefix: tuple[str, ...]) -> str:
    err = exc.errors()[0]
    loc = tuple(str(p) for p in err["loc"] if not isinstance(p, int))
    key = ".".join(loc)
    line = _line_of(text, (*prefix, *loc))
    if err["loc"][:1] == ("measures",):  # an array of tables: [[measures]] number n
        index = next((p for p in err["loc"] if isinstance(p, int)), 0)
        key = f"measures[{index}]" + "".join(f".{p}" for p in loc[1:])
        key = key if len(err["loc"]) > 1 else "measures"
        line = _line_in_array(text, ".".join((*prefix, "measures")), index, loc[1:])
    where = f"{path}:{line}" if line else str(path)
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    if err["type"] == "extra_forbidden":
        section = ".".join(loc[:-1]) or "top level"
        section = f"[{section}]" if loc[:1] == ("measures",) else section
        known = _known_keys(loc[:-1])
        hint = f"; known keys there: {', '.join(known)}" if known else ""
        return f"{where}: unknown key '{key}' in [{section}]{hint}{more}"
    got = err.get("input")
    shown = got is not None and not isinstance(got, dict | list)
    got_text = f" (got {got!r})" if shown else ""
    msg = str(err["msg"]).removeprefix("Value error, ")
    if not key:  # a rule across sections (a goal naming a measure)
        return f"{where}: {msg}{more}"
    return f"{where}: bad value for '{key}': {msg}{got_text}{more}"


def _line_in_array(text: str, table: str, index: int, key: tuple[str, ...]) -> int | None:
    """1-based line of ``key`` in the ``index``-th ``[[table]]`` (its header's line when the
    key is not written there, e.g. a key it lacks)."""
    seen, header = -1, None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if re.match(r"^\[\[\s*" + re.escape(table) + r"\s*\]\]$", line):
            seen += 1
            if seen == index:
                header = number
            elif seen > index:
                break
        elif line.startswith("["):
            if header is not None:
                break
        elif header is not None and key and re.match(rf"^{re.escape(key[0])}\s*=", line):
            return number
    return header


def _known_keys(section: tuple[str, ...]) -> list[str]:
    model: Any = Directives
    for part in section:
        field = model.model_fields.get(part)
        annotation = field.annotation if field is not None else None
        if get_origin(annotation) is list:  # an array of tables: [[measures]]
            annotation = get_args(annotation)[0]
        if not isinstance(annotation, type):
            return []
        model = annotation
    return list(model.model_fields)


def line_of(text: str, loc: tuple[str, ...], path: Path) -> int | None:
    """1-based line of the key at ``loc`` in a directives file (for a check made above
    this module: the runner's name, judge/runners/registry.py)."""
    prefix = ("tool", "selfforge") if path.name == "pyproject.toml" else ()
    return _line_of(text, (*prefix, *loc))


def _line_of(text: str, loc: tuple[str, ...]) -> int | None:
    """1-based line where the key at ``loc`` is written (best effort, for messages)."""
    if not loc:
        return None
    table, key = ".".join(loc[:-1]), loc[-1]
    current = ""
    fallback = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        header = re.match(r"^\[\s*([^\[\]]+?)\s*\]$", line)
        if header:
            current = header.group(1)
            if current == ".".join(loc):
                fallback = number
            continue
        match = re.match(r"^([A-Za-z0-9_.\-\"']+)\s*=", line)
        if not match:
            continue
        name = match.group(1).strip("\"'")
        full = f"{current}.{name}" if current else name
        if full == ".".join(loc) or (current == table and name == key):
            return number
    return fallback


def render_default(
    test: str | None,
    lint: str | None,
    goals: list[str],
    runner: str = "auto",
    junit: str | None = None,
    commented: bool = False,
    modules: list[str] | None = None,
) -> str:
    """The commented selfforge.toml that ``selfforge init`` writes; ``commented``: the
    test command (and its runner) did not run here, so it is written as a comment."""
    from jinja2 import Environment, PackageLoader

    env = Environment(loader=PackageLoader("selfforge", "prompts"), keep_trailing_newline=True)
    template = env.get_template("selfforge.toml.j2")
    return template.render(
        test=test,
        lint=lint,
        goals=goals,
        roles=list(ROLES),
        runner=runner,
        junit=junit,
        off="# " if commented else "",
        modules=modules or [],
    )
