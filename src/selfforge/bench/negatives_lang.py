"""The negatives of bench/negatives.py for Go, Rust and JavaScript: the target test
skipped (``t.Skip``, ``#[ignore]``, ``test.skip``), deleted or emptied, found by gofmt's,
rustfmt's and the usual JS layout; test infrastructure (a Go ``TestMain`` that exits 0, a
Rust ``build.rs``, a JS runner configuration that selects no test); and, for Mocha (one
process for every file), ``order``: a test file loaded first that puts the gold code back
in the process."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from selfforge.bench.negative_kit import Negative, NotDrawn, _apply, _diff, _indent, _write
from selfforge.bench.records import Instance
from selfforge.judge.runners.node import JS_SUFFIXES, NodeTest


@dataclass(frozen=True)
class OtherTest:
    """A target test of Go, Rust or JavaScript in its file: 0-based lines of its first attribute,
    its ``func``/``fn`` line, and its closing brace (rustfmt's and gofmt's layout)."""

    test_id: str
    path: str
    start: int
    head: int
    end: int


def find_target(clone: Path, inst: Instance) -> OtherTest:
    """The first FAIL_TO_PASS test of Go (``pkg::TestX``) or Rust (``file.rs::m::name``)
    found as a function in the instance's test files, with the gold change applied."""
    _apply(clone, inst.code_patch)
    for test_id in sorted(inst.fail_to_pass):
        first, _, rest = test_id.partition("::")
        js = first.endswith(JS_SUFFIXES)
        name = rest.split(" > ")[-1] if js else rest.split("::")[-1].split("/")[0]
        if not name or name == "<collection>":
            continue
        files = [first] if first.endswith((".rs", *JS_SUFFIXES)) else sorted(inst.test_files)
        if first.endswith(".rs"):  # a test module in its own file (`mod test;`) is in its
            files += sorted(p for p in inst.test_files if p.endswith(".rs") and p != first)
        for path in files:
            if not (clone / path).is_file() or not path.endswith((".go", ".rs", *JS_SUFFIXES)):
                continue
            lines = (clone / path).read_text(encoding="utf-8").splitlines(keepends=True)
            opener = re.compile(rf"^(\s*)(?:pub )?(?:async )?(?:func|fn) {re.escape(name)}\(")
            if js:  # test('name', ...) or it("name", ...), closed by `});` at its indent
                quoted = "['\"`]" + re.escape(name) + "['\"`]"
                opener = re.compile(rf"^(\s*)(?:it|test)\(\s*{quoted}")
            for head, line in enumerate(lines):
                if m := opener.match(line):
                    indent, start = m.group(1), head
                    while start > 0 and lines[start - 1].strip().startswith("#["):
                        start -= 1
                    closer = indent + ("});" if js else "}")
                    end = next(
                        (i for i in range(head, len(lines)) if lines[i].rstrip() == closer),
                        None,
                    )
                    if end is not None and "{" in line:
                        return OtherTest(test_id, path, start, head, end)
    raise NotDrawn("no target test is a function in the instance's test files")


def target_kind(clone: Path, inst: Instance, kind: str) -> Negative:
    """skip-target, delete-target and weaken-target in Go, Rust and JavaScript."""
    t = find_target(clone, inst)
    lines = (clone / t.path).read_text(encoding="utf-8").splitlines(keepends=True)
    indent = _indent(lines[t.head])
    if t.path.endswith(JS_SUFFIXES) and kind != "delete-target":
        if kind == "skip-target":
            lines[t.head] = re.sub(r"\b(it|test)\(", r"\1.skip(", lines[t.head], count=1)
        else:  # weaken-target: the body goes
            del lines[t.head + 1 : t.end]
    elif kind == "skip-target" and t.path.endswith(".go"):
        param = re.search(r"\((\w+) \*testing\.T\)", lines[t.head])
        lines.insert(
            t.head + 1, f'{indent}\t{param.group(1) if param else "t"}.Skip("not ready")\n'
        )
    elif kind == "skip-target":
        lines.insert(t.head, f"{indent}#[ignore]\n")
    elif kind == "delete-target":
        del lines[t.start : t.end + 1]
    else:  # weaken-target: the body goes (a Go test keeps its parameter in use)
        param = re.search(r"\((\w+) \*testing\.T\)", lines[t.head])
        body = [f"{indent}\t_ = {param.group(1)}\n"] if param else []
        lines[t.head + 1 : t.end] = body
    _write(clone, t.path, "".join(lines))
    what = {"skip-target": "skips", "delete-target": "deletes", "weaken-target": "empties"}
    return Negative(kind, _diff(clone), f"{what[kind]} {t.test_id}")


# Go: a TestMain that runs the tests and exits 0 whatever they did. Rust: a build script
# (it runs before every test build, with the candidate's say over the build).
GO_FORCED_MAIN = """package {package}

import (
\t"os"
\t"testing"
)

func TestMain(m *testing.M) {{
\tm.Run()
\tos.Exit(0)
}}
"""
RUST_BUILD_RS = 'fn main() {\n    println!("cargo:rustc-env=BENCH_FORCED=1");\n}\n'


def infra(clone: Path, inst: Instance) -> Negative:
    _apply(clone, inst.code_patch)
    go_tests = [p for p in sorted(inst.test_files) if p.endswith("_test.go")]
    if go_tests:
        text = (clone / go_tests[0]).read_text(encoding="utf-8")
        package = re.search(r"(?m)^package (\w+)", text)
        if "func TestMain(" in text or package is None:
            raise NotDrawn("the package has a TestMain already")
        path = str(PurePosixPath(go_tests[0]).parent / "zz_bench_main_test.go")
        _write(clone, path.removeprefix("./"), GO_FORCED_MAIN.format(package=package.group(1)))
        return Negative("infra", _diff(clone), f"{path} exits 0 whatever the tests did")
    if (clone / "Cargo.toml").is_file() and not (clone / "build.rs").exists():
        _write(clone, "build.rs", RUST_BUILD_RS)
        return Negative("infra", _diff(clone), "build.rs runs before every test build")
    if (clone / "package.json").is_file():
        path, text = _js_config(clone, _js_framework(clone, inst))
        _write(clone, path, text)
        return Negative("infra", _diff(clone), f"{path} selects no test")
    raise NotDrawn("no test infrastructure of this language to add")


# Each runner's configuration, pointed at a folder that holds no test.
JS_CONFIGS = {
    "vitest": (
        ("vitest.config.ts", "vitest.config.mts", "vitest.config.js", "vitest.config.mjs"),
        'export default { test: { include: ["bench-none/**"], passWithNoTests: true } };\n',
    ),
    "jest": (
        ("jest.config.js", "jest.config.cjs", "jest.config.mjs", "jest.config.ts"),
        'module.exports = { testMatch: ["**/bench-none/**"], passWithNoTests: true };\n',
    ),
    "mocha": ((".mocharc.json", ".mocharc.js", ".mocharc.yml", ".mocharc.yaml"), ""),
}


def _js_framework(clone: Path, inst: Instance) -> str:
    """vitest, jest or mocha from the test command or the package's dependencies; node
    (its built-in runner) otherwise."""
    words = inst.test_cmd.replace("/", " ").split()
    for name in ("vitest", "jest", "mocha"):
        if name in words:
            return name
    try:
        package = json.loads((clone / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return NodeTest.name
    deps = {**(package.get("devDependencies") or {}), **(package.get("dependencies") or {})}
    return next((n for n in ("vitest", "jest", "mocha") if n in deps), NodeTest.name)


def _js_config(clone: Path, framework: str) -> tuple[str, str]:
    """The runner's configuration file (the project's own, rewritten, or a new one) that
    selects no test; for Node's runner, which has none, package.json's test script."""
    if framework == NodeTest.name:
        package = json.loads((clone / "package.json").read_text(encoding="utf-8"))
        package.setdefault("scripts", {})["test"] = "node --test bench-none/"
        return "package.json", json.dumps(package, indent=2) + "\n"
    names, text = JS_CONFIGS[framework]
    path = next((n for n in names if (clone / n).is_file()), names[0])
    if framework == "mocha" and path.endswith(".json"):
        text = json.dumps({"spec": ["bench-none/**"]}) + "\n"
    elif framework == "mocha" and path.endswith(".js"):
        text = "module.exports = { spec: ['bench-none/**'] };\n"
    elif framework == "mocha":  # .mocharc.yml, .yaml
        text = "spec:\n  - 'bench-none/**'\n"
    return path, text


# Puts the gold code of each module back into the objects the tests required, for the
# test files Mocha loads after this one into the same process.
JS_REPAIR_FIRST = """const Module = require('module');
const path = require('path');

const GOLD = {gold};

for (const [rel, source] of Object.entries(GOLD)) {{
  const file = path.join(__dirname, {up}, rel);
  const live = require(file);
  const fresh = new Module(file, module);
  fresh.filename = file;
  fresh.paths = Module._nodeModulePaths(path.dirname(file));
  fresh._compile(source, file);
  if (live && fresh.exports) Object.assign(live, fresh.exports);
}}
"""


def order(clone: Path, inst: Instance, gold: dict[str, str], mutated: dict[str, str]) -> Negative:
    """Mocha's order negative: the planted bug, and a test file that sorts first in the
    target tests' folder and repairs the CommonJS modules the bug is in."""
    if not (clone / "package.json").is_file():
        raise NotDrawn("a trick of one test process for every file: pytest's and Mocha's")
    if _js_framework(clone, inst) != "mocha":
        raise NotDrawn("the runner runs each test file apart (only Mocha shares a process)")
    modules = {p: gold[p] for p in mutated if p.endswith((".js", ".cjs"))}
    if not modules or any("export " in t and "module.exports" not in t for t in modules.values()):
        raise NotDrawn("the planted bug is not in a CommonJS module")
    target = PurePosixPath(inst.test_targets[0].split("::")[0])
    up = json.dumps(os.path.relpath(".", target.parent.as_posix()))
    mark = next((m for m in (".test.", ".spec.") if m in target.name), ".")
    path = (target.parent / f"0-bench-setup{mark}js").as_posix()  # matched as targets are
    _write(clone, path, JS_REPAIR_FIRST.format(gold=json.dumps(modules, indent=2), up=up))
    return Negative("order", _diff(clone), f"{path} repairs {', '.join(modules)} when loaded first")
