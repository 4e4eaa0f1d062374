"""The layout shows the design (issue 36): a folder per part, imports running one way.

The parts and their order come from one place, ARCHITECTURE.md's table "Parts, top to
bottom": a module may import its own part and the parts listed below it, never one
above. Every import counts, those inside functions too: an import put in a function to
dodge a circle still runs; and those under ``if TYPE_CHECKING:``, which never run: a
type named from a part above is a dependency on it all the same (the proposers once
named ``run.attempt.Attempt`` so; they are handed a ``ProposerContext`` of their own
part now). A package's ``__init__`` that Python runs before a submodule is not counted
as imported by it: only what a module names.
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
        targets: set[str] = set()
        for node in ast.walk(tree):
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


def test_type_checking_imports_count(tmp_path: Path) -> None:
    """A type named under ``if TYPE_CHECKING:`` from a part above is against the order,
    and closes a circle: propose/explore.py naming run/attempt.py's Attempt, as it once
    did (run/attempt.py imports the proposers)."""
    copy = _copy(tmp_path)
    (copy / "repo" / "planted.py").write_text(
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from selfforge.run import loop\n"
    )
    explore = copy / "propose" / "explore.py"
    explore.write_text(
        explore.read_text()
        + "\n\nif TYPE_CHECKING:\n    from selfforge.run.attempt import Attempt\n"
    )
    graph = imports(copy)
    problems = against_order(graph, layers(), copy)
    assert "selfforge.repo.planted (repo/) imports selfforge.run.loop (run/), above it" in problems
    assert any(
        {"selfforge.propose.explore", "selfforge.run.attempt"} <= set(c) for c in circles(graph)
    )


# --- the verdict's words are the judge's (issue 40) ---------------------------------------

_SQL_OUTCOME = re.compile(
    r"outcome\s*(?:=|!=|<>)\s*'(\w+)'|outcome\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.I
)
_OUTCOME_NAMES = {"outcome", "verdict"}  # a keyword, a dict key or a call that takes one
_OUTCOME_CALLS = {"result", "outcome", "count"}  # attempt.result("rejected", …) and the like


def outcome_spellings(src: Path) -> list[str]:
    """Each place outside ``judge/`` that spells a verdict's outcome word itself instead
    of using ``judge.outcome.Outcome``: the one vocabulary, with each word's exit code
    and rank, lives in the judge, so changing how a verdict is decided or named is a
    change in ``judge/`` only.

    What counts as spelling one (docstrings and prose never do):

    - ``needs_review``, ``could_not_judge`` or ``no_edits`` as a whole string anywhere:
      those words mean nothing but an outcome;
    - ``accepted``, ``rejected`` or ``error`` (words with other uses) where an outcome
      goes: compared with something (``r.outcome == "accepted"``, ``in (…)``; ``error``,
      also a test's outcome, only compared with an outcome or a verdict), as an
      ``outcome=``/``verdict=`` argument, as the first argument of ``.result(…)``,
      ``.outcome(…)`` or ``.count(…)``, as the value of an ``"outcome"``/``"verdict"``
      key in a dict;
    - a dict, tuple, list or set holding two or more outcome words: a second vocabulary,
      ranking, label or style table;
    - SQL comparing the ``outcome`` column with a quoted word (``outcome = 'accepted'``):
      bind ``Outcome`` members as parameters instead.

    Parts below ``judge/`` (``ui/``, ``roles/``, ``journal/``…) cannot import it, so
    they spell none either: they take an outcome as a value from their caller.
    """
    from selfforge.judge.outcome import Outcome

    words = {o.value for o in Outcome}
    only_outcomes = {"needs_review", "could_not_judge", "no_edits"}
    found = []
    for name, path in modules(src).items():
        if name == "selfforge.judge" or name.startswith("selfforge.judge."):
            continue
        tree = ast.parse(path.read_text(), str(path))
        parent = {
            id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)
        }
        prose = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in prose:
                continue
            where = f"{name}:{node.lineno}: {node.value[:60]!r}"
            for m in _SQL_OUTCOME.finditer(node.value):
                quoted = re.findall(r"'(\w+)'", m[0])
                if set(quoted) & words:
                    found.append(where + " (SQL on the outcome column)")
            if node.value not in words:
                continue
            if node.value in only_outcomes or _outcome_place(node, parent, words):
                found.append(where)
    return found


def _outcome_place(node: ast.Constant, parent: dict[int, ast.AST], words: set[str]) -> bool:
    word, up = node.value, parent.get(id(node))
    if isinstance(up, ast.Dict) and node in up.values:  # {"verdict": "accepted"}
        key = up.keys[up.values.index(node)]
        if isinstance(key, ast.Constant) and key.value in _OUTCOME_NAMES:
            return True
    if isinstance(up, ast.Tuple | ast.List | ast.Set | ast.Dict):
        items = [*up.keys, *up.values] if isinstance(up, ast.Dict) else up.elts
        named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in words}
        if len(named) >= 2:
            return True
        held, up = up, parent.get(id(up))  # ("failed", "error") in a comparison: below
    else:
        held = node
    if isinstance(up, ast.Compare):
        # "error" is a test's outcome too: it counts compared with an outcome or verdict
        others = [o for o in [up.left, *up.comparators] if o is not held]
        named = any(w in ast.unparse(o) for o in others for w in _OUTCOME_NAMES)
        return named or word != "error"
    if isinstance(up, ast.keyword):
        return up.arg in _OUTCOME_NAMES
    if isinstance(up, ast.Call) and up.args and up.args[0] is node:
        func = up.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return called in _OUTCOME_CALLS
    return False


def test_outcome_words_are_spelled_only_in_the_judge() -> None:
    assert outcome_spellings(SRC) == []


def test_a_second_spelling_of_an_outcome_is_found(tmp_path: Path) -> None:
    """A comparison, a table of labels and a SQL filter, each planted outside judge/, are
    found; the same code in judge/ is the vocabulary's home and is not."""
    copy = _copy(tmp_path)
    planted = (
        'LABELS = {"accepted": "ok", "needs_review": "look"}\n\n\n'
        "def landed(result):\n"
        '    return result.outcome == "accepted"\n\n\n'
        "SQL = \"SELECT count(*) FROM attempts WHERE outcome = 'rejected'\"\n"
    )
    (copy / "run" / "planted.py").write_text(planted)
    (copy / "judge" / "planted.py").write_text(planted)
    found = outcome_spellings(copy)
    assert [f.split(":")[0] for f in found] == ["selfforge.run.planted"] * 4, found
    assert outcome_spellings(_copy(tmp_path / "clean")) == []  # the control


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


def test_the_judge_is_grouped_by_layer() -> None:
    """``judge/`` holds its decisions at the top and three layers below them (issue 40):
    the sandbox a check runs in, the runner adapters, the rules that read a change. No
    folder of selfforge's code is named ``tests/``, ``test/`` or ``testing/``: selfforge
    run on itself takes those for test infrastructure (the demo's sample projects, which
    are package data, have theirs)."""
    judge = SRC / "judge"
    layers_below = sorted(p.name for p in judge.iterdir() if (p / "__init__.py").exists())
    assert layers_below == ["rules", "runners", "sandbox"]
    named_as_tests = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*")
        if p.is_dir() and p.name in ("tests", "test", "testing") and "demo_data" not in p.parts
    ]
    assert named_as_tests == []


# What had two homes or more before issue 40, each defined once now (a top-level function,
# class or constant of that name in one module of src/selfforge); and what was dead, gone.
ONE_HOME = (
    "parse_junit",  # the JUnit parser that refuses entities (judge/runners/junit.py)
    "OUTCOME_RANK",  # the ranking of a test's outcomes (judge/runners/results.py)
    "Outcome",  # the ranking and words of an attempt's outcome (judge/outcome.py)
    "pytest_settings",  # pytest's settings read from its files (repo/testpaths.py)
    "added_test_files",  # the test files a change adds (judge/runners/registry.py)
    "detect",  # which runner a command is (judge/runners/registry.py)
    "jobs",  # how many suites may run at once (judge/sandbox/limits.py)
    "cache_key",  # the baseline kept between runs (judge/baseline.py)
    "find_breaking",  # the mutation machinery, bench's and the judge's (judge/mutants.py)
    "added_lines",  # the lines a diff adds, where mutants are drawn (judge/mutants.py)
)
GONE = ("commit_staged", "detect_checks", "RUNNER_NAMES", "_jobs", "mutate_suffixes")


def definitions(src: Path) -> dict[str, list[str]]:
    """Each top-level name a module of the package defines -> those modules."""
    found: dict[str, list[str]] = {}
    for name, path in modules(src).items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                found.setdefault(node.name, []).append(name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, []).append(name)
    return found


def test_each_concept_has_one_home() -> None:
    found = definitions(SRC)
    assert {n: found.get(n) for n in ONE_HOME if len(found.get(n, [])) != 1} == {}
    assert {n: found[n] for n in GONE if n in found} == {}
    assert not (SRC / "judge" / "baseline_cache.py").exists()
    assert not (SRC / "run" / "check_baseline.py").exists()
    assert not (SRC / "bench" / "mutate.py").exists()  # judge/mutants.py
    lines = len((SRC / "cli" / "resident.py").read_text().splitlines())
    assert lines < 400, f"cli/resident.py has {lines} lines"


def test_a_second_home_is_found(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "bench" / "planted.py").write_text(
        "OUTCOME_RANK = {}\n\n\ndef parse_junit(data):\n    return None\n"
    )
    found = definitions(copy)
    assert sorted(found["OUTCOME_RANK"]) == [
        "selfforge.bench.planted",
        "selfforge.judge.runners.results",
    ]
    assert len(found["parse_junit"]) == 2
