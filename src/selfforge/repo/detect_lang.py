"""Test runners of projects that are not Python, for ``selfforge init`` and ``doctor``:
``go.mod`` (go test), ``Cargo.toml`` (cargo test), ``package.json`` (its test script on
Node's runner; Vitest, Mocha or Jest with a JUnit report).

Each answer names the runner selfforge reads results from (``[checks] runner``), and for
JUnit the report file the command writes.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

JUNIT_FILE = ".selfforge-junit.xml"


@dataclass(frozen=True)
class Found:
    runner: str  # go | cargo | node | junit
    test: str
    source: str  # where it came from, in words
    junit: str | None = None
    lint: str | None = None
    toolchain: str = ""  # the program the runner needs


def detect(root: Path) -> Found | None:
    if (root / "go.mod").is_file():
        return Found("go", "go test ./...", "go.mod", lint="go vet ./...", toolchain="go")
    if (root / "Cargo.toml").is_file():
        return Found("cargo", "cargo test --offline", "Cargo.toml", toolchain="cargo")
    if (root / "package.json").is_file():
        return _node(root)
    return None


def _node(root: Path) -> Found | None:
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(package, dict):
        return None
    scripts = package.get("scripts") or {}
    script = str(scripts.get("test", "")) if isinstance(scripts, dict) else ""
    deps = {
        **(package.get("devDependencies") or {}),
        **(package.get("dependencies") or {}),
    }
    if re.search(r"(^|[\s/])node\s+(.*\s)?--test\b", script):
        return Found(
            "node", "npm test", "package.json's test script (node --test)", toolchain="node"
        )
    out = JUNIT_FILE
    if "vitest" in deps:  # its results cache would go into node_modules, read-only here
        command = f"npx vitest run --no-cache --reporter=junit --outputFile={out}"
        return Found("junit", command, "vitest in package.json", out, toolchain="npx")
    if "mocha" in deps:
        command = f"npx mocha{_mocha_args(script)} --reporter xunit --reporter-options output={out}"
        return Found("junit", command, "mocha in package.json", out, toolchain="npx")
    if "jest" in deps and "jest-junit" in deps:
        command = f"JEST_JUNIT_OUTPUT_FILE={out} npx jest --ci --reporters=jest-junit"
        return Found("junit", command, "jest and jest-junit in package.json", out, toolchain="npx")
    if script and "no test specified" not in script:
        return Found("tap", "npm test", "package.json's test script (read as TAP)", toolchain="npm")
    return None


_REPORTER_FLAG = re.compile(r"^(--reporter|-R|--reporter-options?|-O)$")
# What would stop mocha at the first failure (every test's outcome is wanted) or keep it
# running: dropped.
_DROPPED = {"--bail", "-b", "--watch", "-w", "--"}


def _mocha_args(script: str) -> str:
    """The test script's own arguments to mocha (its interface, its files), without its
    reporter, which selfforge replaces, and ``--bail`` (every test's outcome is wanted):
    ``mocha --ui qunit --reporter spec --bail test/`` gives `` --ui qunit test/``."""
    m = re.search(r"(?:^|[\s/])(?:_?mocha)\s+([^&|;]*)", script)
    if m is None:
        return ""
    words, kept, skip = shlex.split(m.group(1)), [], False
    for word in words:
        if skip:
            skip = False
        elif _REPORTER_FLAG.match(word):
            skip = True
        elif word in _DROPPED:
            continue
        elif not word.startswith(("--reporter=", "--reporter-option")):
            kept.append(word)
    return "".join(" " + shlex.quote(w) for w in kept)


def toolchains() -> list[tuple[str, str | None]]:
    """The runners' programs on this machine: (name, path or None)."""
    return [(name, shutil.which(name)) for name in ("go", "cargo", "node", "npm")]
