"""``go test``: per-test results from ``-json`` (test2json), set through GOFLAGS so that
a wrapper (``make test``, a script) reports the same way.

Test ids are ``<package import path>::<TestName>`` (subtests ``TestName/case``). A
package that fails to build, or fails outside any test (``TestMain``, a panic in
``init``), counts as a module that failed to collect. Runs offline: ``GOPROXY=off``,
the repository's build cache (judge/sandbox/buildcache.py; a private one where none is shared),
the user's module cache shown read-only. ``-count=1``: the shared cache also holds test
results, and every judged run (a flaky rerun above all) must run its tests.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from selfforge.judge.runners.base import Adapter, Found, Prepared, add
from selfforge.judge.runners.coverage import GO_PROFILE, Lines, read_go
from selfforge.judge.runners.results import TestReport

_ACTIONS = {"pass": "passed", "fail": "failed", "skip": "skipped"}
_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(build|setup) failed\]", re.M)


GO_OUTPUT_KB = 64 * 1024  # about 50,000 tests' events


# A file's build constraint, before its package clause: `//go:build !go1.18`.
_BUILD = re.compile(r"^//go:build\s+(.+?)\s*$", re.M)
_PACKAGE = re.compile(r"^package\s", re.M)
# The GOOS/GOARCH a file's name may end with (`_windows.go`, `_linux_arm64.go`): built
# only there. The common ones; `go tool dist list` has the rest.
_PLATFORM = re.compile(
    r"_(aix|android|darwin|dragonfly|freebsd|illumos|ios|js|netbsd|openbsd|plan9|solaris|"
    r"wasip1|windows|386|arm|arm64|loong64|mips|mips64|mips64le|mipsle|ppc64|ppc64le|"
    r"riscv64|s390x|wasm)\.go$"
)


class GoTest(Adapter):
    name = "go"
    language = "go"
    command_pattern = r"(^|[\s/])go\s+test\b"
    program = "go"
    lint_beside_tests = True
    config_files = ("testdata/*",)
    weakening = r"\bt\.Skip(?:Now|f)?\(|\btesting\.Short\(\)"
    weakening_suffixes = (".go",)
    harness = (r"^\+func TestMain\(", "a TestMain")  # it runs the tests, sets the exit code
    coverage_tool = "go test -coverprofile"
    coverage_suffixes = (".go",)
    missing_module = (
        r"no required module provides package ([\w./~-]+)",
        r"cannot find module providing package ([\w./~-]+)",
        r"missing go\.sum entry for module providing package ([\w./~-]+)",
    )
    build_error = r"^\S+\.go:\d+:\d+: .+$"
    missing_symbol = (
        r"undefined: ([\w.]+)",
        r"arguments in call to ([\w.]+)",
        r"in argument to ([\w.]+)",
        r"([\w.]+) undefined \(type",
        r"cannot use .* as .* value in .*? to ([\w.]+)",
    )
    unrunnable = (
        (
            r"go: cannot find main module|go\.mod file not found|does not contain main module",
            'run go test where go.mod is ([checks] test = "cd DIR && go test ./..."), '
            "or create one with `go mod init`",
        ),
        (
            r"(?:go\.mod|module) requires go >= ?(\S+)",
            "install Go {0} or newer: the check runs the local go (GOTOOLCHAIN=local, "
            "the check has no network to fetch another)",
        ),
        (
            r"missing go\.sum entry|module lookup disabled by GOPROXY=off|"
            r"no required module provides package|cannot find module providing package",
            "run `go mod download` in the repository: the check is offline and reads "
            "your module cache",
        ),
    )

    @classmethod
    def test_file(cls, path: str, rule: object = None) -> bool:
        return path.endswith("_test.go")

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        if (root / "go.mod").is_file():
            return Found("go", "go test ./...", "go.mod", lint="go vet ./...")
        return None

    module_files = ("go.mod",)

    @classmethod
    def is_module(cls, root: Path, folder: str) -> bool:
        """A folder with a ``go.mod``: ``go test ./...`` stops at a nested module's
        boundary, from a go.work's root too."""
        return (root / folder / "go.mod").is_file()

    @classmethod
    def modules(cls, root: Path) -> list[str]:
        """Every folder below the root with a ``go.mod``, and what a ``go.work`` uses."""
        found = set(super().modules(root))
        found.update(d for d in _work_uses(root) if cls.is_module(root, d))
        return sorted(found)

    @classmethod
    def module_command(cls, command: str) -> str:
        return "go test ./..."

    def prepare(self, command: str, only: list[str] | None, scratch: str) -> Prepared:
        times = max((n for n, _ in (self.repeat or {}).values()), default=1)
        flags = ["-json", f"-count={max(times, 1)}"]  # a flaky rerun: every run, one build
        names = sorted({t.split("::", 1)[1].split("/")[0] for t in only or [] if "::" in t})
        if names:
            flags.append("-run=^(" + "|".join(re.escape(n) for n in names) + ")$")
        env = {
            "GOFLAGS": " ".join(flags),
            "GOCACHE": f"{scratch}/go-build",  # where no cache is shared
            "GOPROXY": "off",
            "GOTOOLCHAIN": "local",
            "GOTELEMETRY": "off",
        }
        if (modcache := module_cache()) is not None:
            env["GOMODCACHE"] = str(modcache)
        return Prepared(command, env, self.home_needs(), output_kb=GO_OUTPUT_KB)

    def home_needs(self) -> tuple[Path, ...]:
        """The module cache (go itself is a PATH entry, or in /usr/lib/go)."""
        modcache = module_cache()
        return (modcache,) if modcache is not None else ()

    def can_select(self) -> bool:
        return True

    def repeats(self) -> bool:
        return True

    def coverage_env(self, out_dir: str, files: list[str], tree: Path) -> dict[str, str]:
        """-coverprofile, -coverpkg naming only the changed files' packages (by import
        path) of the module at the tree's top, merged into GOFLAGS. A nested module's
        files are left out (a pattern ``go test ./...`` cannot resolve must not change
        the run): no test of this run reaches them, and they count as not run."""
        modules = _modules(tree)
        top = next((module for module, where in modules if not where), None)
        packages = set()
        for path in files:
            folder = Path(path).parent.as_posix()
            nested = any(where and (folder + "/").startswith(where + "/") for _, where in modules)
            if top is not None and not nested:
                packages.add(top if folder == "." else f"{top}/{folder}")
        if not packages:
            return {}
        flags = f"-coverprofile={out_dir}/{GO_PROFILE} -coverpkg={','.join(sorted(packages))}"
        # each `go test` of the command rewrites the profile (`go test -tags purego . &&
        # go test .`: the last one's alone was read); the test binaries run through
        # GO_EXEC, which keeps each one's profile beside it (read_go merges them all)
        return {"GOFLAGS": f"{flags} -exec={out_dir}/{GO_EXEC}"}

    def coverage_files(self) -> dict[str, str]:
        return {GO_EXEC: _KEEP_PROFILE}

    def measures(self, path: str, tree: Path) -> bool:
        """Not a nested module's file (its own go.mod): its suite is another run's."""
        folder = str(Path(path).parent.as_posix()) + "/"
        return not any(where and folder.startswith(where + "/") for _, where in _modules(tree))

    def read_coverage(self, out_dir: Path, files: list[str], tree: Path) -> Lines | None:
        return read_go(out_dir, _modules(tree), files)

    def not_built(self, path: Path) -> str:
        """A file this go never builds: its build constraint, or a platform in its name
        (a profile never names it, for that reason, not for want of a test)."""
        if path.suffix != ".go":
            return ""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        package = _PACKAGE.search(text)
        head = text[: package.start()] if package else text
        if m := _BUILD.search(head):
            return f"not built here: its build constraint is `//go:build {m.group(1)}`"
        if m := _PLATFORM.search(path.name):
            return f"not built here: only for {m.group(1)}, by its name"
        return ""

    def owner(self, test_id: str, tree: Path) -> str | None:
        """A test's package folder: its import path less the module path of the nearest
        go.mod (the repository's own, or a nested module's)."""
        package = test_id.split("::", 1)[0]
        for module, where in _modules(tree):
            if package == module or package.startswith(module + "/"):
                rest = package[len(module) :].strip("/")
                return "/".join(p for p in (where, rest) if p) or "."
        return None

    def parse(self, output: str, tree: Path) -> TestReport | None:
        report = parse_go_json(output)
        if report is not None and self.repeat:
            _repeated(report, output, self.repeat)
        return report


GO_EXEC = "go-test-exec"
# `go test -exec`: the test binary runs as go test runs it, then its own profile (go test
# merges it into -coverprofile's file, which the command's next `go test` rewrites) is
# copied beside this script, a file per binary
_KEEP_PROFILE = """#!/bin/sh
"$@"
status=$?
profile=
for arg in "$@"; do
	case "$arg" in
	-test.coverprofile=*) profile="${arg#-test.coverprofile=}" ;;
	esac
done
if [ -n "$profile" ] && [ -f "$profile" ]; then
	cp "$profile" "${0%/*}/go.cover.$$"
fi
exit $status
"""

_MODULE_LINE = re.compile(r"^module\s+(\S+)", re.M)
_USE = re.compile(r"^\s*(?:use\s*\(([^)]*)\)|use\s+(\S+))", re.M)


def _work_uses(root: Path) -> list[str]:
    """The folders a ``go.work`` at the root uses (repo-relative, posix; not the root)."""
    try:
        text = (root / "go.work").read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return []
    found = []
    for block, single in _USE.findall(text):
        for line in (block or single).splitlines():
            word = line.split("//", 1)[0].strip().strip('"')
            folder = Path(word).as_posix().removeprefix("./") if word else ""
            if folder and folder != "." and not folder.startswith(("/", "..")):
                found.append(folder)
    return found


def _modules(tree: Path) -> list[tuple[str, str]]:
    """(module path, folder) for the go.mod files near the top of the tree, longest
    module path first so that a nested module wins."""
    found = []
    for gomod in [tree / "go.mod", *tree.glob("*/go.mod"), *tree.glob("*/*/go.mod")]:
        try:
            m = _MODULE_LINE.search(gomod.read_text(encoding="utf-8", errors="replace")[:4096])
        except OSError:
            continue
        if m:
            where = gomod.parent.relative_to(tree).as_posix()
            found.append((m.group(1).strip('"'), "" if where == "." else where))
    if not (tree / "go.mod").is_file() and (root := _gopath_root(tree)):
        found.append((root, ""))
    return sorted(found, key=lambda f: -len(f[0]))


_IMPORT = re.compile(r'^\s*(?:import\s+)?(?:[\w.]+\s+)?"([\w.~-]+(?:/[\w.~-]+)+)"', re.M)


@functools.lru_cache(maxsize=8)
def _gopath_root(tree: Path) -> str | None:
    """A tree without go.mod (GOPATH mode, a history older than modules): its import
    path, as its own files import its subpackages (``github.com/gobwas/glob/match`` from
    a tree with a ``match`` folder: ``github.com/gobwas/glob``). Read once per tree and
    process: ``owner`` asks for every test id, and a project keeps its import path."""
    counts: dict[str, int] = {}
    files = [*tree.glob("*.go"), *tree.glob("*/*.go")][:200]
    for file in files:
        try:
            text = file.read_text(encoding="utf-8", errors="replace")[:16384]
        except OSError:
            continue
        for path in _IMPORT.findall(text):
            parts = path.split("/")
            if ".." in parts:
                continue
            for k in range(1, len(parts)):
                prefix, rest = "/".join(parts[:k]), "/".join(parts[k:])
                if "." in parts[0] and any((tree / rest).glob("*.go")):
                    counts[prefix] = counts.get(prefix, 0) + 1
    return max(counts, key=lambda p: counts[p]) if counts else None


def _events(output: str) -> Iterator[dict]:
    """The JSON objects of ``go test -json``'s output, other lines passed over."""
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def parse_go_json(output: str) -> TestReport | None:
    report = TestReport(started=False, finished=True)
    failed_packages: dict[str, str] = {}
    logs: dict[str, list[str]] = {}
    for event in _events(output):
        action, package, test = event.get("Action"), event.get("Package"), event.get("Test")
        if not isinstance(package, str):
            continue
        report.started = True
        if isinstance(test, str):
            test_id = f"{package}::{test}"
            if action == "output" and isinstance(event.get("Output"), str):
                logs.setdefault(test_id, []).append(event["Output"])
            elif action in _ACTIONS:
                message = _failure_line(logs.get(test_id, [])) if action == "fail" else ""
                add(report, test_id, _ACTIONS[action], message, _secs(event))
        elif action == "fail":
            failed_packages[package] = "the package failed"
    for m in _BUILD_FAILED.finditer(output):
        report.started = True
        what = "build" if m.group(2) == "build" else "set up"
        report.collect_errors[m.group(1)] = f"the package does not {what}"
    for package, why in failed_packages.items():
        own = [t for t, o in report.outcomes.items() if t.startswith(package + "::")]
        if not any(report.outcomes[t] in ("failed", "error") for t in own):
            report.collect_errors.setdefault(package, f"{why} outside any test (TestMain, init)")
    if not report.started:
        return None
    return report


def _repeated(report: TestReport, output: str, repeat: dict[str, tuple[int, str]]) -> None:
    """A rerun with -count=N reports each test N times: one whose runs did not all end as
    it had (``repeat``'s outcome) gets the first that did not, as if run alone until its
    outcome changed; ``runs``: how many times it ran. (Worst-of keeps a forged pass line
    from hiding a failure in a judging run; here a varying test is only a suspect, which
    runs of the whole suite confirm or not.)"""
    seen: dict[str, list[str]] = {}
    for event in _events(output):
        if event.get("Action") not in _ACTIONS:
            continue
        package, test = event.get("Package"), event.get("Test")
        if isinstance(package, str) and isinstance(test, str):
            seen.setdefault(f"{package}::{test}", []).append(_ACTIONS[event["Action"]])
    for test, (_, had) in repeat.items():
        outcomes = seen.get(test, [])
        if outcomes:
            report.runs[test] = len(outcomes)
        if other := next((o for o in outcomes if o != had), None):
            report.outcomes[test] = other


def _secs(event: dict) -> float:
    value = event.get("Elapsed")
    return float(value) if isinstance(value, int | float) and 0 <= value < 1e7 else 0.0


def _failure_line(lines: list[str]) -> str:
    for text in lines:
        stripped = text.strip()
        if stripped and not stripped.startswith(("=== ", "--- ")):
            return stripped
    return ""


def module_cache() -> Path | None:
    """The user's Go module cache (go's own default: $GOMODCACHE, else $GOPATH/pkg/mod,
    else ~/go/pkg/mod), when there is one to show read-only."""
    path = os.environ.get("GOMODCACHE") or ""
    if not path:
        gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0]
        path = str(Path(gopath or Path.home() / "go") / "pkg" / "mod")
    return Path(path) if Path(path).is_dir() else None
