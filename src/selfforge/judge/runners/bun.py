"""``bun test``, Bun's own test runner (``bun:test``: ``test``, ``describe``, ``expect``):
per-test results from the JUnit XML it writes (``--reporter=junit``), read with the
judge's JUnit parser, and its closing counts (`` N pass``, `` N fail``) checked against
them.

Test ids are ``<file>::<describe> > <test>`` as ``junit.py`` makes them. The report is
written in the tree under a name of selfforge's, removed before the run (a committed one
is never read) and read before the tree is restored; its per-test results must agree with
the counts bun prints, or the results are untrusted. The bun program is shown to the
sandbox by its own folders (the link the command or PATH names and the file it points
to), never the rest of home; bun's caches go to the check's scratch folder.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from selfforge.judge.runners.base import Adapter, Found, Prepared, package_scripts, words
from selfforge.judge.runners.junit import JUnit
from selfforge.judge.runners.node import JS_CONFIG, JS_SUFFIXES, js_test_file
from selfforge.judge.runners.results import TestReport

if TYPE_CHECKING:
    from selfforge.repo.testpaths import TestRule

REPORT = ".selfforge-bun-junit.xml"
_BUN_TEST = re.compile(r"(^|[\s/;&|(])((?:\S*/)?bun\s+test)\b")
_COUNT = re.compile(r"^\s*(\d+) (pass|fail)$", re.M)


class BunTest(Adapter):
    name = "bun"
    language = "javascript"
    command_pattern = r"(^|[\s/])bun\s+test\b"
    program = "bun"
    trust_note = (
        "per-test results come from a report file the code under test could also write; "
        "they must agree with bun's own counts and the exit code, but a test that forges "
        "both is not caught"
    )
    config_files = (*JS_CONFIG, "bunfig.toml")
    # bun:test's own marks beside the frameworks' (.skip, .only, .todo, .if/.skipIf/.todoIf,
    # .failing: a test that passes by failing)
    weakening = r"\b(?:it|test|describe)\.(?:skip|only|todo|if|skipIf|todoIf|failing)\b"
    weakening_suffixes = JS_SUFFIXES
    missing_module = (r"Cannot find (?:module|package) \"([^\"]+)\"",)
    unrunnable = (
        (
            r"(?:^|[\s:'‘])(bun)['’]?: (?:command )?not found",
            "install Bun (npm install bun) so that `bun` is on PATH inside the check, or "
            "name its full path in [checks] test",
        ),
    )
    no_tests = (
        (
            r"^(0 test files matching \S+.*)$",
            "bun test runs files named *.test.{js,ts,jsx,tsx}, *_test.*, *.spec.* or "
            "*_spec.*: name yours so",
        ),
    )

    @classmethod
    def test_file(cls, path: str, rule: TestRule | None = None) -> bool:
        name = PurePosixPath(path).name
        return js_test_file(path, rule) or bool(
            PurePosixPath(path).suffix in JS_SUFFIXES and re.search(r"[._](test|spec)\.", name)
        )

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        """A package.json whose test script runs ``bun test``: init runs bun itself, so
        that selfforge can ask it for its report."""
        script = package_scripts(root).get("test", "") if (root / "package.json").is_file() else ""
        if cls.runs(f" {script} "):
            source = "package.json's test script (bun test)"
            return Found("bun", "bun test", source)
        return None

    def prepare(self, command: str, only: list[str] | None, scratch: str) -> Prepared:
        flags = f" --reporter=junit --reporter-outfile={REPORT}"
        command = _BUN_TEST.sub(lambda m: m.group(0) + flags, command, count=1)
        env = {
            "BUN_INSTALL_CACHE_DIR": f"{scratch}/bun-cache",
            "BUN_RUNTIME_TRANSPILER_CACHE_PATH": "0",  # no cache written into home
            "DO_NOT_TRACK": "1",
            "NO_COLOR": "1",
        }
        return Prepared(f"rm -f {REPORT}; {command}", env, self._shown(command))

    def _shown(self, command: str) -> tuple[Path, ...]:
        """The folders of the bun the command runs when they are under home: the link
        (``node_modules/.bin``) and the package holding the real program."""
        home = Path.home().resolve()
        found = []
        for word in words(command):
            if PurePosixPath(word).name != "bun":
                continue
            where = word if "/" in word else shutil.which(word)
            if where is None:
                continue
            exe = Path(where).absolute()
            for folder in (exe.parent, exe.resolve().parent.parent):
                if home in folder.resolve().parents:
                    found.append(folder)
        return tuple(dict.fromkeys(found))

    def home_needs(self) -> tuple[Path, ...]:
        """The bun PATH finds, by its own folders (nothing else of home)."""
        return self._shown("bun")

    def parse(self, output: str, tree: Path) -> TestReport | None:
        report = JUnit(REPORT).parse(output, tree)
        if report is None:
            return None
        said = {kind: int(n) for n, kind in _COUNT.findall(output)}
        counts = report.summary()
        mine = (counts.get("passed", 0), counts.get("failed", 0) + counts.get("error", 0))
        theirs = (said.get("pass", 0), said.get("fail", 0))
        if said and mine != theirs:
            report.channel_problem = (
                f"the JUnit report disagrees with bun's own counts ({mine[0]} passed, "
                f"{mine[1]} failed in the report; {theirs[0]} pass, {theirs[1]} fail)"
            )
        elif not said:
            report.channel_problem = "bun printed no counts of its own to check the report by"
        return report
