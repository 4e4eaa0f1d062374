"""Node's built-in test runner (``node --test``, also behind ``npm test``): selfforge's
own reporter (``inject/selfforge_node_reporter.mjs``), loaded through NODE_OPTIONS.

Test ids are ``<file>::<suite> > <test>``. The runner's closing counts (``pass``,
``fail``) must agree with the per-test lines, or the results are untrusted.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from selfforge.judge.runners.base import (
    Adapter,
    Found,
    Prepared,
    add,
    matches_globs,
    package_scripts,
)
from selfforge.judge.runners.coverage import Lines, read_v8
from selfforge.judge.runners.results import NODE_REPORTER, PLUGIN_DIR, TestReport

if TYPE_CHECKING:
    from selfforge.repo.testpaths import TestRule

REPORTER = NODE_REPORTER
PREFIX = "@@selfforge-node@@ "
_COUNT = re.compile(r"^(pass|fail|skipped|todo|cancelled) (\d+)$")


JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
# The JavaScript test frameworks' marks (Node's runner, Mocha, Vitest, Jest, Jasmine):
# .skip/.only/.todo, x- and f-prefixed calls, { skip: true } options.
JS_WEAKENING = (
    r"\b(?:it|test|describe|context|suite|bench)\.(?:skip|only|todo|skipIf|runIf)\b"
    r"|\b(?:xit|xdescribe|xtest|xcontext|fit|fdescribe|ftest)\s*\("
    r"|\{\s*(?:skip|only|todo)\s*:\s*(?:true|['\"])"
)
# The JavaScript test frameworks' settings and snapshots.
JS_CONFIG = (
    "jest.config.*", "vitest.config.*", "vitest.workspace.*", "vite.config.*", ".mocharc*",
    "karma.conf.*", "ava.config.*", ".nycrc*", "playwright.config.*", "cypress.config.*",
    "*.snap", "__snapshots__/*",
)  # fmt: skip


def js_test_file(path: str, rule: TestRule | None) -> bool:
    """A JavaScript or TypeScript file the runners run as tests: ``x.test.ts``,
    ``x.spec.js``, code in a test folder."""
    from selfforge.repo.testpaths import DEFAULT

    return PurePosixPath(path).suffix in JS_SUFFIXES and (rule or DEFAULT).is_test_path(path)


class NodeTest(Adapter):
    name = "node"
    language = "javascript"
    command_pattern = r"(^|[\s/])node\s+(.*\s)?--test\b"
    program = "node"
    config_files = JS_CONFIG
    weakening = JS_WEAKENING
    weakening_suffixes = JS_SUFFIXES
    missing_module = (r"Cannot find (?:module|package) '([^']+)'",)
    # Every node process writes V8's coverage where NODE_V8_COVERAGE points; only plain
    # JavaScript: a transpiled file's offsets are not the file's (TypeScript: not measured).
    coverage_tool = "node (V8 coverage)"
    coverage_suffixes = (".js", ".mjs", ".cjs")
    unrunnable = (
        (
            r"[Mm]issing script:? \"?([\w:.-]+)",
            'add the "{0}" script to package.json, or fix [checks] test in selfforge.toml',
        ),
        (
            r"(?:^|[\s:'‘])(node|nodejs)['’]?: (?:command )?not found|['‘](node)['’]: No such file",
            "install Node.js so that `node` is on PATH inside the check, or name its full "
            "path in [checks] test",
        ),
    )
    no_tests = (
        (
            rf'^{re.escape(PREFIX)}\{{"diagnostic":"(tests 0)"\}}$',
            "node --test runs files named *.test.js, *-test.js, *_test.js, test-*.js or "
            "test.js and every file under a test/ folder (.mjs and .cjs too): name yours "
            "so, or name them after --test",
        ),
    )

    @classmethod
    def test_file(cls, path: str, rule: TestRule | None = None) -> bool:
        return js_test_file(path, rule)

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        if cls.runs(package_scripts_at(root).get("test", "")):
            return Found("node", "npm test", "package.json's test script (node --test)")
        return None

    module_files = ("package.json",)

    @classmethod
    def is_module(cls, root: Path, folder: str) -> bool:
        """A package package.json's ``workspaces`` names that has a test script."""
        globs = workspace_globs(root)
        return (
            bool(globs)
            and matches_globs(folder, globs)
            and "test" in package_scripts(root / folder)
        )

    @classmethod
    def module_command(cls, command: str) -> str:
        return "npm test"

    def prepare(self, command: str, only: list[str] | None, scratch: str) -> Prepared:
        reporter = f"{self.inject_dir or PLUGIN_DIR}/{REPORTER}"
        env = {
            "NODE_OPTIONS": f"--test-reporter={reporter} --test-reporter-destination=stdout",
            "npm_config_cache": f"{scratch}/npm-cache",
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
            "NO_COLOR": "1",
        }
        return Prepared(command, env, self.home_needs())

    def home_needs(self) -> tuple[Path, ...]:
        """The installation of the node PATH finds (nvm's ``versions/node/vX``), also
        when ``node`` is a link into it from elsewhere."""
        from selfforge.judge.sandbox.home import installation

        found, home = shutil.which("node"), Path.home().resolve()
        real = Path(found).resolve() if found else None
        if real is None or home not in real.parents:
            return ()  # a system node (/usr/bin): visible as it is
        return tuple(sorted(installation(real.parent, home)))

    def parse(self, output: str, tree: Path) -> TestReport | None:
        return parse_node(output, tree)

    def coverage_env(self, out_dir: str, files: list[str], tree: Path) -> dict[str, str]:
        return {"NODE_V8_COVERAGE": out_dir}

    def read_coverage(self, out_dir: Path, files: list[str], tree: Path) -> Lines | None:
        return read_v8(out_dir, tree, files)


def parse_node(output: str, tree: Path) -> TestReport | None:
    report = TestReport(started=False, finished=False)
    said: dict[str, int] = {}
    for line in output.splitlines():
        if not line.startswith(PREFIX):
            continue
        try:
            record = json.loads(line[len(PREFIX) :])
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        report.started = True
        if record.get("finished") is True:
            report.finished = True
        elif isinstance(record.get("diagnostic"), str):
            if m := _COUNT.match(record["diagnostic"].strip()):
                said[m.group(1)] = said.get(m.group(1), 0) + int(m.group(2))
        elif isinstance(record.get("names"), list) and record.get("outcome") in (
            "passed",
            "failed",
            "skipped",
        ):
            names = " > ".join(str(n) for n in record["names"])
            test_id = f"{_relative(str(record.get('file', '')), tree)}::{names}"
            secs = record.get("secs")
            secs = float(secs) if isinstance(secs, int | float) and 0 <= secs < 1e7 else 0.0
            add(report, test_id, record["outcome"], str(record.get("msg") or ""), secs)
    if not report.started:
        return None
    counts = report.summary()
    mine = (counts.get("passed", 0), counts.get("failed", 0))
    theirs = (said.get("pass", 0), said.get("fail", 0) + said.get("cancelled", 0))
    if said and mine != theirs:
        report.channel_problem = (
            f"the test output disagrees with the runner's own counts ({mine[0]} passed, "
            f"{mine[1]} failed in the per-test lines; pass {theirs[0]}, fail {theirs[1]})"
        )
    return report


def _relative(file: str, tree: Path) -> str:
    if file.startswith("file://"):
        file = file[len("file://") :]
    try:
        return Path(file).resolve().relative_to(tree.resolve()).as_posix()
    except (ValueError, OSError):
        return file


def workspace_globs(root: Path) -> list[str]:
    """package.json's ``workspaces`` (a list, or ``{"packages": [...]}``)."""
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    spaces = data.get("workspaces") if isinstance(data, dict) else None
    if isinstance(spaces, dict):
        spaces = spaces.get("packages")
    return [str(g) for g in spaces] if isinstance(spaces, list) else []


def package_scripts_at(root: Path) -> dict[str, str]:
    """package.json's scripts, for ``init`` (the user's checkout, not a check's tree)."""
    return package_scripts(root) if (root / "package.json").is_file() else {}
