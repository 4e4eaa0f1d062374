"""``cargo test``: per-test results from libtest's output, with ``--no-fail-fast`` so
every test binary runs.

Test ids are ``<target source>::<test path>`` (``src/lib.rs::tests::adds``,
``tests/it.rs::integration``, doc tests under ``doc``). A crate that does not compile
counts as a module that failed to collect. libtest prints one summary per binary; the
per-test lines must add up to it, or the results are untrusted (code under test can
write to the same stream). Runs offline with what it needs of the user's rustup and cargo
homes shown read-only (``home_needs``).
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath

from selfforge.judge.runners.base import (
    Adapter,
    Found,
    Prepared,
    add,
    matches_globs,
)
from selfforge.judge.runners.results import DOCTESTS, WHOLE_SUITE, TestReport

_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+)(?: \(|$)", re.M)
_DOCTESTS = re.compile(r"^\s*Doc-tests (\S+)", re.M)
_TEST = re.compile(r"^test (\S.*?) \.\.\. (ok|FAILED|ignored(?:, .*)?|bench)\s*$")
_RESULT = re.compile(
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured"
)
_COMPILE_ERROR = re.compile(r"^error(?:\[E\d+\])?: (.*)$|^error: could not compile `([^`]+)`", re.M)
_OUTCOME = {"ok": "passed", "FAILED": "failed", "bench": "passed"}


_RUSTUP_FIX = (
    "rustup has no default toolchain inside the check: run `rustup default stable`, or set "
    '[sandbox] env = ["RUSTUP_TOOLCHAIN"] and export it'
)


class CargoTest(Adapter):
    name = "cargo"
    language = "rust"
    command_pattern = r"(^|[\s/])cargo\s+(\+\S+\s+)?test\b"
    program = "cargo"
    config_files = (
        "build.rs", ".cargo/config", ".cargo/config.toml", "rust-toolchain",
        "rust-toolchain.toml",
    )  # fmt: skip
    # unit tests live in the sources: every Rust file's diff is read
    weakening = r"#\[ignore\b|#\[should_panic\b"
    weakening_suffixes = (".rs",)
    tests_in_sources = True
    # cargo-llvm-cov / -C instrument-coverage need rustup's llvm-tools and a rebuild of
    # every crate instrumented: more than a check can install offline or afford per run.
    coverage_suffixes = (".rs",)
    coverage_absent = (
        "not measured for Rust (it needs cargo-llvm-cov and rustup's llvm-tools, and an "
        "instrumented rebuild of every crate)"
    )
    removed_test = r"^-[ \t]*(#\[(?:\w+::)?test\b|#\[cfg\(test\)\])"
    missing_module = (
        r"can't find crate for `(\w+)`",
        r"unresolved import `(\w+)`",
        r"no matching package named `([\w-]+)` found",
    )
    unrunnable = (
        (r"rustup could not choose a version of \S+ to run|no default toolchain", _RUSTUP_FIX),
        (
            r"toolchain '([^']+)' is not installed",
            "run `rustup toolchain install {0}` (named by rust-toolchain.toml or "
            "RUSTUP_TOOLCHAIN; the check has no network to install it)",
        ),
        (
            r"could not find `Cargo\.toml`",
            'run cargo where Cargo.toml is: [checks] test = "cd DIR && cargo test"',
        ),
    )

    @classmethod
    def test_file(cls, path: str, rule: object = None) -> bool:
        """An integration test (``tests/it.rs``, not ``tests/common/mod.rs``), or a test
        module in a file of its own (``src/tests.rs``)."""
        from selfforge.repo.testpaths import is_rust_test_module

        parts = PurePosixPath(path).parts
        in_tests = len(parts) >= 2 and parts[-2] == "tests"
        return path.endswith(".rs") and (in_tests or is_rust_test_module(path))

    @classmethod
    def detect_init(cls, root: Path) -> Found | None:
        if (root / "Cargo.toml").is_file():
            return Found("cargo", "cargo test --offline", "Cargo.toml")
        return None

    module_files = ("Cargo.toml",)

    @classmethod
    def is_module(cls, root: Path, folder: str) -> bool:
        """A crate (a Cargo.toml with a [package]): a workspace's member (covered when the
        root's run tests the workspace) or a crate of its own."""
        return (root / folder / "Cargo.toml").is_file() and "package" in _manifest(root, folder)

    @classmethod
    def module_command(cls, command: str) -> str:
        return "cargo test --offline"

    @classmethod
    def covers_module(cls, command: str, root: Path, folder: str) -> bool | None:
        """A member of the root's [workspace] is tested by a run at the root when the
        root is a virtual manifest or the command says --workspace (--all); a crate that
        is no member never is."""
        top = _manifest(root, ".")
        workspace = top.get("workspace")
        if not isinstance(workspace, dict):
            return False
        members = [str(m) for m in workspace.get("members") or []]
        excluded = [str(m) for m in workspace.get("exclude") or []]
        member = matches_globs(folder, members) and not matches_globs(folder, excluded)
        whole = "package" not in top or bool(re.search(r"\s--(workspace|all)\b", f" {command} "))
        return member and whole

    def prepare(self, command: str, only: list[str] | None, scratch: str) -> Prepared:
        flags = "" if "--no-fail-fast" in command else " --no-fail-fast"
        command = re.sub(
            r"(\bcargo\s+(?:\+\S+\s+)?test\b)", lambda m: m.group(1) + flags, command, count=1
        )
        command += _selection(only or [], " -- " in command)
        env = {"CARGO_TERM_COLOR": "never", "CARGO_NET_OFFLINE": "true", "RUST_BACKTRACE": "0"}
        for key, path in zip(("RUSTUP_HOME", "CARGO_HOME"), _homes(), strict=True):
            if path.is_dir():
                env[key] = str(path)
        return Prepared(command, env, self.home_needs())

    def home_needs(self) -> tuple[Path, ...]:
        """rustup's toolchains and settings, cargo's programs and its downloaded crates
        (registry, git checkouts); not cargo's config or credentials."""
        rustup, cargo = _homes()
        wanted = (rustup / "toolchains", rustup / "settings.toml")
        wanted += (cargo / "bin", cargo / "registry", cargo / "git")
        return tuple(p for p in wanted if p.exists())

    def can_select(self) -> bool:
        return True

    def owner(self, test_id: str, tree: Path) -> str | None:
        """The source file of a test's target (``tests/it.rs``, ``src/lib.rs``), or the
        file a doctest is in."""
        first = test_id.removeprefix(DOCTESTS).split("::", 1)[0].split(" - ", 1)[0]
        return first.strip() or None

    def parse(self, output: str, tree: Path) -> TestReport | None:
        return parse_libtest(output)


def _selection(only: list[str], has_args: bool) -> str:
    """libtest's filters for these ids, each quoted for the shell (a doctest's name holds
    spaces and ``<>``). A doctest's id has no line number (``src/lib.rs - f``, ``... (example
    2)``), while libtest names it ``src/lib.rs - f (line 12)``: ``--exact`` could not select
    it, so with a doctest among them every filter is a substring one — a few more tests may
    run (``adds`` selects ``adds_zero`` too), none of the wanted ones is left out."""
    names, exact = set(), True
    for test in only:
        if "::" not in test:
            continue
        name = test.split("::", 1)[1]
        if test.startswith(DOCTESTS):
            name, exact = _DOCTEST_RANK.sub("", name), False
        names.add(name)
    if not names:
        return ""
    flags = "--exact " if exact else ""
    return (" " if has_args else " -- ") + flags + " ".join(map(shlex.quote, sorted(names)))


_DOCTEST_RANK = re.compile(r" \(example \d+\)$")


def _manifest(root: Path, folder: str) -> dict:
    """A Cargo.toml's tables ({} when unreadable)."""
    try:
        return tomllib.loads((root / folder / "Cargo.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _homes() -> tuple[Path, Path]:
    """rustup's and cargo's homes, as the user's environment or their defaults say."""
    home = Path.home()
    rustup = Path(os.environ.get("RUSTUP_HOME") or home / ".rustup")
    return rustup, Path(os.environ.get("CARGO_HOME") or home / ".cargo")


def parse_libtest(output: str) -> TestReport | None:
    report = TestReport(started=False, finished=True)
    sections: list[_Section] = []
    merged: list[str] = []  # result lines that hold another line (interleaved or forged)
    for line in output.splitlines():
        if m := _RUNNING.match(line):
            sections.append(_Section(m.group(1)))
        elif m := _DOCTESTS.match(line):
            sections.append(_Section("doc"))
        elif sections and (m := _TEST.match(line)):
            if " ... " in m.group(1):  # no test's name holds libtest's separator
                merged.append(line.strip()[:120])
            status = m.group(2)
            outcome = "skipped" if status.startswith("ignored") else _OUTCOME[status]
            name = m.group(1)
            if sections[-1].target != "doc":  # `#[should_panic]`'s mark is no part of its
                name = name.removesuffix(" - should panic")  # name (libtest selects without)
            sections[-1].results.append((f"{sections[-1].target}::{name}", outcome))
        elif sections and (m := _RESULT.match(line)):
            sections[-1].summaries.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for section in sections:  # doctests finish in any order: their ids come after
        stable = _stable_ids([test_id for test_id, _ in section.results])
        for test_id, outcome in section.results:
            add(report, stable[test_id], outcome)
            section.tests.add(stable[test_id])
    report.started = bool(sections)
    _messages(output, sections, report)
    problems = [p for s in sections if (p := s.problem(report))]
    if merged:  # the counts may still add up: which test is which cannot be told
        problems.insert(0, f"a result line holds another ({merged[0]!r})")
    if any(not s.summaries for s in sections):
        report.finished = False  # a test binary that never printed its summary crashed
    errors = _COMPILE_ERROR.findall(output)
    if errors and not report.outcomes:
        report.started = True
        first = errors[0][0] or f"could not compile `{errors[0][1]}`"
        report.collect_errors[WHOLE_SUITE] = first[:300]
    if problems:
        report.channel_problem = (
            "the test output disagrees with libtest's own summary (" + problems[0] + ")"
        )
    return report if report.started else None


_DOCTEST_LINE = re.compile(r" \(line (\d+)\)(?= - compile(?: fail)?$|$)")


def _stable_ids(test_ids: list[str]) -> dict[str, str]:
    """Each doctest's id without its line number (``src/lib.rs - f (line 12)``), which
    any change above it would move: the item's name, and, when the item has several
    examples, the example's rank by line (``src/lib.rs - f (example 2)``). By line, not
    by the order the results came in: doctests run in parallel and finish in any order.
    Other ids are their own."""
    lines: dict[str, list[int]] = {}
    for test_id in test_ids:
        if test_id.startswith(DOCTESTS) and (m := _DOCTEST_LINE.search(test_id)):
            base = _DOCTEST_LINE.sub("", test_id, count=1)
            lines.setdefault(base, []).append(int(m.group(1)))
    stable = {}
    for test_id in test_ids:
        m = _DOCTEST_LINE.search(test_id) if test_id.startswith(DOCTESTS) else None
        if m is None:
            stable[test_id] = test_id
            continue
        base = _DOCTEST_LINE.sub("", test_id, count=1)
        rank = sorted(set(lines[base])).index(int(m.group(1))) + 1
        stable[test_id] = base if rank == 1 else f"{base} (example {rank})"
    return stable


_STDOUT_BLOCK = re.compile(r"^---- (\S+) stdout ----$", re.M)
_PANIC = re.compile(r"panicked at [^\n]*:\n(.+)")


def _messages(output: str, sections: list[_Section], report: TestReport) -> None:
    """The panic message of each failed test, from libtest's ``---- name stdout ----``."""
    for m in _STDOUT_BLOCK.finditer(output):
        panic = _PANIC.search(output, m.end(), m.end() + 4000)
        for section in sections:
            test_id = f"{section.target}::{m.group(1)}"
            if panic and report.outcomes.get(test_id) == "failed":
                report.messages.setdefault(test_id, panic.group(1).strip()[:300])


class _Section:
    """One test binary's run: the tests it printed, and its summary lines."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.results: list[tuple[str, str]] = []  # (id as printed, outcome), in order
        self.tests: set[str] = set()
        self.summaries: list[tuple[int, int, int]] = []

    def problem(self, report: TestReport) -> str | None:
        counts = [0, 0, 0]
        for test in self.tests:
            counts[{"passed": 0, "failed": 1, "skipped": 2}[report.outcomes[test]]] += 1
        if len(self.summaries) > 1:
            return f"{self.target} printed {len(self.summaries)} summaries"
        if self.summaries and tuple(counts) != self.summaries[0]:
            said = self.summaries[0]
            return (
                f"{self.target}: {counts[0]} passed, {counts[1]} failed, {counts[2]} ignored "
                f"in the per-test lines, {said[0]}, {said[1]}, {said[2]} in the summary"
            )
        return None
