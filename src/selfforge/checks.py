"""The check cascade, cheapest first: syntax, lint, tests.

Every command runs in its own session (process group) with a timeout that kills the whole
group, in an environment without API keys. Output is trimmed head and tail with a note of
what was cut. For pytest, per-test outcomes come from a junit XML report.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.models.secrets import mask, scrub_env

HEAD_LINES, TAIL_LINES, MAX_CHARS = 40, 60, 6000


def trim(text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES, limit: int = MAX_CHARS) -> str:
    """Keep the head and tail of long output, saying how much was cut in between."""
    lines = text.splitlines()
    if len(lines) > head + tail:
        cut = len(lines) - head - tail
        lines = [*lines[:head], f"[... {cut} lines cut ...]", *lines[-tail:]]
    out = "\n".join(lines)
    if len(out) > limit:
        half = limit // 2
        out = f"{out[:half]}\n[... {len(out) - limit} characters cut ...]\n{out[-half:]}"
    return out


@dataclass
class CommandResult:
    command: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    output: str  # trimmed, secrets masked
    full_output: str = field(default="", repr=False)  # untrimmed, for parsers; not stored


def run_command(
    command: str,
    cwd: Path,
    timeout_s: float,
    *,
    extra_env: dict[str, str] | None = None,
    on_start: Callable[[int | None], None] | None = None,
) -> CommandResult:
    """Run a shell command in its own process group; kill the group on timeout."""
    env = scrub_env(os.environ)
    env.update({"PYTHONDONTWRITEBYTECODE": "1", **(extra_env or {})})
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        if on_start:
            on_start(proc.pid)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Also reaps what the command left running in the background.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if on_start:
                on_start(None)
        sink.seek(0)
        raw = sink.read().decode("utf-8", errors="replace")
    duration = time.monotonic() - started
    output = trim(mask(raw))
    if timed_out:
        output += f"\n[killed: no result within the {timeout_s:g} s timeout]"
    return CommandResult(
        command,
        None if timed_out else proc.returncode,
        timed_out,
        duration,
        output,
        raw[-2_000_000:],
    )


# --- syntax ----------------------------------------------------------------------------


@dataclass
class SyntaxProblem:
    path: str
    line: int
    message: str
    text: str

    def __str__(self) -> str:
        shown = f"\n    {self.text.strip()}" if self.text.strip() else ""
        return f"{self.path}:{self.line}: SyntaxError: {self.message}{shown}"


def check_syntax(root: Path, paths: Iterable[str]) -> list[SyntaxProblem]:
    """Compile every changed Python file that still exists."""
    problems = []
    for rel in paths:
        if not rel.endswith(".py") or not (root / rel).is_file():
            continue
        source = (root / rel).read_bytes()
        try:
            compile(source, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            line = exc.lineno or 0
            lines = source.decode("utf-8", errors="replace").splitlines()
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            problems.append(SyntaxProblem(rel, line, exc.msg, text))
        except ValueError as exc:  # e.g. null bytes
            problems.append(SyntaxProblem(rel, 0, str(exc), ""))
    return problems


# --- lint ------------------------------------------------------------------------------

_CONCISE = re.compile(r"^(?P<path>[^\s:][^:\n]*\.\w+):(?P<line>\d+):(?:\d+:)?\s*(?P<msg>.+)$")
_ARROW = re.compile(r"^\s*-->\s*(?P<path>[^:\n]+):(?P<line>\d+)(?::\d+)?\s*$")
_RULE_LINE = re.compile(r"^(?P<msg>[A-Z]+\d+\b.*)$")


@dataclass(frozen=True)
class LintFinding:
    path: str
    line: int
    message: str

    @property
    def key(self) -> tuple[str, str]:
        """Identity that survives line shifts: file and message, not the line number."""
        return (self.path, self.message)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def parse_lint(output: str, exit_code: int | None) -> list[LintFinding]:
    """Findings in ``path:line[:col]: message`` form (and ruff's ``--> path:line`` form)."""
    findings: list[LintFinding] = []
    last_rule = ""
    for raw in output.splitlines():
        line = raw.rstrip()
        if m := _CONCISE.match(line):
            findings.append(LintFinding(m["path"].removeprefix("./"), int(m["line"]), m["msg"]))
        elif m := _ARROW.match(line):
            msg = last_rule or "lint finding"
            findings.append(LintFinding(m["path"].removeprefix("./"), int(m["line"]), msg))
        elif m := _RULE_LINE.match(line.strip()):
            last_rule = m["msg"]
    if not findings and exit_code not in (0, None):
        findings.append(LintFinding("", 0, f"lint command failed with exit code {exit_code}"))
    return findings


def new_findings(before: list[LintFinding], after: list[LintFinding]) -> list[LintFinding]:
    """Findings in ``after`` beyond those already in ``before`` (by file and message)."""
    budget = Counter(f.key for f in before)
    fresh = []
    for finding in after:
        if budget[finding.key] > 0:
            budget[finding.key] -= 1
        else:
            fresh.append(finding)
    return fresh


# --- tests -----------------------------------------------------------------------------


@dataclass
class TestReport:
    """Per-test outcomes (``passed``, ``failed``, ``error``, ``skipped``) and messages."""

    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o == "passed"}

    @property
    def collected(self) -> int:
        return len(self.outcomes)


def is_pytest(command: str) -> bool:
    return re.search(r"(^|[\s/])(py\.test|pytest)(\s|$)", command) is not None


def run_tests(
    command: str,
    cwd: Path,
    timeout_s: float,
    *,
    on_start: Callable[[int | None], None] | None = None,
    only: list[str] | None = None,
    ignore: list[str] | None = None,
) -> tuple[CommandResult, TestReport | None]:
    """Run the test command; with pytest, also collect per-test outcomes via junit XML.

    ``only`` (pytest only) narrows the run to those test files, for a fast first pass;
    ``ignore`` leaves files out (a candidate's new tests, which must not share a process
    with the tests that judge it).
    """
    if not is_pytest(command):
        result = run_command(command, cwd, timeout_s, on_start=on_start)
        return result, parse_unittest(result.full_output)
    with tempfile.TemporaryDirectory(prefix="selfforge-junit-") as tmp:
        report_path = Path(tmp) / "report.xml"
        addopts = f"--junit-xml={report_path} -p no:cacheprovider"
        if only:
            addopts += " " + " ".join(shlex.quote(p) for p in only)
        for path in ignore or []:
            addopts += f" --ignore={shlex.quote(path)}"
        previous = os.environ.get("PYTEST_ADDOPTS", "")
        env = {"PYTEST_ADDOPTS": f"{previous} {addopts}".strip()}
        result = run_command(command, cwd, timeout_s, extra_env=env, on_start=on_start)
        report = parse_junit(report_path) if report_path.exists() else None
    return result, report


def parse_junit(path: Path) -> TestReport | None:
    try:
        tree = ET.parse(path)
    except ET.ParseError:
        return None
    report = TestReport()
    for case in tree.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = (child.get("message") or child.text or "").strip()
                break
            if child.tag == "skipped":
                outcome = "skipped"
        report.outcomes[name] = outcome
        if message:
            report.messages[name] = message.splitlines()[0][:300]
    return report


_UNITTEST_LINE = re.compile(
    r"^(?P<name>\w+) \((?P<where>[\w.]+)\)[^\n]*?(?:\n[^\n]*?)?\s\.\.\.\s"
    r"(?P<status>ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
    re.M,
)
_UNITTEST_BLOCK = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)", re.M)
_UNITTEST_STATUS = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "skipped": "skipped",
    "expected failure": "skipped",
    "unexpected success": "failed",
}


def parse_unittest(output: str) -> TestReport | None:
    """Per-test outcomes from ``python -m unittest -v`` output; None if it has none."""
    report = TestReport()
    for m in _UNITTEST_LINE.finditer(output):
        where = m["where"]
        test_id = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
        report.outcomes[test_id] = _UNITTEST_STATUS[m["status"]]
    if not report.outcomes:
        return None
    blocks = list(_UNITTEST_BLOCK.finditer(output))
    for i, m in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(output)
        body = [ln for ln in output[m.end() : end].splitlines() if ln.strip() and ln[0] != " "]
        body = [
            ln
            for ln in body
            if not ln.startswith(("---", "===", "Traceback", "Ran ", "FAILED", "OK"))
        ]
        where = m["where"]
        test_id = where if where.endswith("." + m["name"]) else f"{where}.{m['name']}"
        if body:
            report.messages[test_id] = body[-1][:300]
    return report


# --- complexity (facts for the critic) ---------------------------------------------------

_BRANCHES = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ExceptHandler,
    ast.With,
    ast.AsyncWith,
    ast.IfExp,
    ast.comprehension,
    ast.Assert,
    ast.match_case,
)


def complexity_findings(root: Path, paths: Iterable[str], limit: int = 10) -> list[str]:
    """Functions in the changed Python files whose cyclomatic complexity exceeds ``limit``."""
    found = []
    for rel in paths:
        if not rel.endswith(".py") or not (root / rel).is_file():
            continue
        try:
            tree = ast.parse((root / rel).read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                score = 1 + sum(
                    isinstance(n, _BRANCHES) or (isinstance(n, ast.BoolOp) and len(n.values) - 1)
                    for n in ast.walk(node)
                )
                if score > limit:
                    found.append(
                        f"{rel}:{node.lineno}: {node.name}() has cyclomatic "
                        f"complexity {score} (over {limit})"
                    )
    return found


def anchor_command(command: str, root: Path) -> str:
    """Point a command's relative executable (``.venv/bin/pytest``) at the user's repository.

    Checks run in a worktree, which has the tracked files only; a virtualenv or build
    folder that git ignores lives in the user's checkout, so use it from there.
    """
    words = command.split(" ")
    for i, word in enumerate(words):
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):  # VAR=value prefixes
            continue
        relative = word.startswith(("./", "../")) or ("/" in word and not word.startswith("/"))
        if relative and (root / word).exists():
            # absolute(), not resolve(): a venv's python is a symlink to the base one
            words[i] = shlex.quote(str((root / word).absolute()))
        break
    return " ".join(words)
