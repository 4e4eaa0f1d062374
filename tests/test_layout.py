"""The layout shows the design (issue 36): a folder per part, imports running one way.

The parts and their order come from one place, ARCHITECTURE.md's table "Parts, top to
bottom": a module may import its own part and the parts listed below it, never one
above. Every import counts, those inside functions too: an import put in a function to
dodge a circle still runs. Imports under ``if TYPE_CHECKING:`` do not count: they never
run, so they order no loading, and they only name the type of a value a caller hands
down (the proposers name ``Attempt``, which hands itself to them). A package's
``__init__`` that Python runs before a submodule is not counted as imported by it
either: only what a module names.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "selfforge"
ROW = re.compile(r"^\|\s*`([\w/]+)`\s*\|")


def layers(architecture: Path = ROOT / "ARCHITECTURE.md") -> list[str]:
    """The parts in ARCHITECTURE.md's table, top first: ``cli/`` (a folder), ``config``
    (a module at the top of src/selfforge)."""
    text = architecture.read_text()
    section = text.split("## Parts, top to bottom", 1)[1].split("\n## ", 1)[0]
    return [m[1] for line in section.splitlines() if (m := ROW.match(line))]


def modules(src: Path) -> dict[str, Path]:
    """Every module of the package, by dotted name; folders without ``__init__.py``
    (demo_data's sample projects, the judge's injected plugin) are data, not modules."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        folder = path.parent
        if any(not (p / "__init__.py").exists() for p in [folder, *folder.parents] if p >= src):
            continue
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def imports(src: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name imported from a package that
    is one of its modules counts as that module)."""
    mods = modules(src)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skipped = _type_checking_only(tree)
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from its own package up
                    package = name.split(".")[: -1 if path.name != "__init__.py" else None]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, *([node.module] if node.module else [])])
                targets.update(f"{base}.{a.name}" for a in node.names)
        graph[name] = {r for t in targets if (r := resolve(t)) and r != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def against_order(graph: dict[str, set[str]], order: list[str], src: Path) -> list[str]:
    """Each import of a part listed above the importer's; and each module whose part the
    table does not list (a new top-level module: put it in a folder, or list it)."""
    rank = {part: n for n, part in enumerate(order)}
    problems = []
    for module, targets in sorted(graph.items()):
        mine = _part(module, src)
        if mine not in rank:
            problems.append(f"{module}: its part {mine} is not in ARCHITECTURE.md's table")
            continue
        for target in sorted(targets):
            theirs = _part(target, src)
            if theirs in rank and rank[theirs] < rank[mine]:
                problems.append(f"{module} ({mine}) imports {target} ({theirs}), above it")
    return problems


def _part(module: str, src: Path) -> str:
    rest = module.split(".")[1:]
    if not rest:
        return "__init__"
    return rest[0] + "/" if (src / rest[0]).is_dir() else rest[0]


def test_no_import_circle_in_selfforge() -> None:
    assert circles(imports(SRC)) == []


def test_every_import_follows_the_order_of_the_parts() -> None:
    order = layers()
    assert "cli/" in order and "judge/" in order and "errors" in order  # the table was read
    assert against_order(imports(SRC), order, SRC) == []


def test_the_table_lists_every_folder_and_each_says_what_it_owns() -> None:
    """A newcomer places a module by its folder: each folder is a row of the table, and
    its ``__init__.py`` says what it owns."""
    order = layers()
    folders = {p.parent.name + "/" for p in SRC.glob("*/__init__.py")}
    assert folders <= set(order), folders - set(order)
    for folder in folders:
        doc = ast.get_docstring(ast.parse((SRC / folder / "__init__.py").read_text()))
        assert doc, f"{folder}__init__.py has no docstring saying what the folder owns"


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "selfforge"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "demo_data"))
    return copy


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    """edits/records.py importing edits/parse.py, which imports records: a circle inside a
    package, planted in a function (where one was once hidden)."""
    copy = _copy(tmp_path)
    records = copy / "edits" / "records.py"
    records.write_text(
        records.read_text() + "\n\ndef _late():\n    from selfforge.edits import parse\n"
    )
    found = circles(imports(copy))
    assert any({"selfforge.edits.parse", "selfforge.edits.records"} <= set(c) for c in found)
    assert circles(imports(_copy(tmp_path / "clean"))) == []  # the control


def test_an_import_against_the_order_is_found(tmp_path: Path) -> None:
    """repo/ importing run/ (the loop, two parts above it) breaks the order without any
    circle: a new module that nothing imports."""
    copy = _copy(tmp_path)
    (copy / "repo" / "planted.py").write_text("from selfforge.run import loop\n")
    graph = imports(copy)
    assert circles(graph) == []
    problems = against_order(graph, layers(), copy)
    assert problems == [
        "selfforge.repo.planted (repo/) imports selfforge.run.loop (run/), above it"
    ]


def test_a_top_level_module_not_in_the_table_is_found(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "helpers.py").write_text("import os\n")
    problems = against_order(imports(copy), layers(), copy)
    assert problems == ["selfforge.helpers: its part helpers is not in ARCHITECTURE.md's table"]


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "repo" / "planted.py").write_text(
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from selfforge.run import loop\n"
    )
    assert against_order(imports(copy), layers(), copy) == []


# --- runner names live in the registry (issue 40.2) -------------------------------------


def registered_runners() -> set[str]:
    """The names of the runners in ``judge/runners/registry.py``'s ``ADAPTERS``."""
    from selfforge.judge.runners import registry

    return {adapter.name for adapter in registry.ADAPTERS}


def _strings(node: ast.AST) -> list[str]:
    """The string constants of a constant or of a tuple, list or set display."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return []


def runner_names_spelled(src: Path, names: set[str]) -> list[str]:
    """Where code outside ``judge/runners/`` decides something by a runner's name spelled
    out, instead of asking the registry (``registry.by_name``, an adapter's facts):

    - a ``Literal[...]`` holding a runner's name (a second list of the names);
    - ``x == "go"`` / ``x != "cargo"`` (a decision keyed on one runner);
    - ``x in ("go", "cargo")`` (on a set of them: the display is on the right of ``in``);
    - a tuple, list or set display, or a dict's keys, holding two runners' names or more
      (a hard-coded list of runners, as doctor's and init's were).

    What is not counted, so that the rule is about runners and not about words: a name
    as a call's argument or a lone string (``Candidate("pytest", ...)``, a command line
    such as ``"python -m pytest"``), and ``"pytest" in text`` (looking for the word in a
    file: the string is on the left of ``in``). A new runner that would need any of the
    counted forms elsewhere belongs in its adapter instead."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith("judge/runners/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            why = None
            if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
                why = "a Literal of runner names" if names & set(_strings(node.slice)) else None
            elif isinstance(node, ast.Compare):
                sides = zip(
                    [node.left, *node.comparators], node.ops, node.comparators, strict=False
                )
                for left, op, right in sides:
                    if isinstance(op, ast.Eq | ast.NotEq) and any(
                        isinstance(s, ast.Constant) and s.value in names for s in (left, right)
                    ):
                        why = "a comparison with a runner's name"
                    elif isinstance(op, ast.In | ast.NotIn) and not isinstance(right, ast.Constant):
                        why = "a test against runner names" if names & set(_strings(right)) else why
            elif isinstance(node, ast.Tuple | ast.List | ast.Set):
                if len(names & set(_strings(node))) >= 2:
                    why = "a list of runner names"
            elif isinstance(node, ast.Dict):
                keys = [k for k in node.keys if k is not None]
                if len(names & {s for k in keys for s in _strings(k)}) >= 2:
                    why = "a table keyed by runner names"
            if why:
                found.append(
                    (rel, node.lineno, f"{rel}:{node.lineno}: {why}: {ast.unparse(node)[:80]}")
                )
    return [line for *_, line in sorted(found)]


def test_no_runner_name_is_spelled_outside_the_registry() -> None:
    """Adding a runner is one adapter file, one registry line and one test: nothing else
    in selfforge lists or compares runner names (ARCHITECTURE.md's recipe)."""
    names = registered_runners()
    assert {"pytest", "go", "cargo", "bun"} <= names  # the registry was read
    assert runner_names_spelled(SRC, names) == []


def test_a_planted_runner_list_and_comparison_are_found(tmp_path: Path) -> None:
    """The forms the rule counts, planted in a new module, are each found; the words it
    leaves alone (an argument, a command line, a word looked for in a text) are not."""
    copy = _copy(tmp_path)
    (copy / "repo" / "planted.py").write_text(
        "from typing import Literal\n\n"
        'Runner = Literal["auto", "go"]\n'
        'OTHERS = ("cargo", "node")\n'
        'PROGRAMS = {"go": "go", "bun": "bun"}\n\n\n'
        "def f(name: str, text: str) -> bool:\n"
        '    print("pytest", "python -m pytest")\n'
        '    return name == "cargo" or name in ("tap",) or "pytest" in text\n'
    )
    found = runner_names_spelled(copy, registered_runners())
    assert [line.split(": ")[1] for line in found] == [
        "a Literal of runner names",
        "a list of runner names",
        "a table keyed by runner names",
        "a comparison with a runner's name",
        "a test against runner names",
    ], found
    assert runner_names_spelled(_copy(tmp_path / "clean"), registered_runners()) == []
