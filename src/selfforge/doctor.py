"""The checks of ``selfforge doctor`` that need the project itself: its virtualenv, its
test and lint commands run once (as the loop would run them: in a worktree of HEAD),
and the sandbox check commands run in. Each finding that fails carries its fix.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_TIMEOUT_S = 600.0
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
_UNITTEST_BAD = re.compile(r"^FAILED \((.*)\)", re.M)


@dataclass(frozen=True)
class Finding:
    status: str  # "ok" | "warn" | "fail"
    what: str
    detail: str = ""
    fix: str = ""


@dataclass
class Ran:
    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False


def check_venv(root: Path) -> Finding:
    from selfforge.detect import detect_project

    found = detect_project(root)
    if found.venv:
        return Finding("ok", "virtualenv", f"{found.venv_kind}: {found.venv}")
    return Finding(
        "warn",
        "virtualenv",
        f"none found; check commands use `{found.python}` from PATH",
        "if the project has one elsewhere, name its python in [checks] test",
    )


def program_missing(kind: str, command: str, root: Path) -> Finding | None:
    """A fail when the command's program cannot be found, before running anything."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return Finding(
            "fail", f"{kind} check", f"cannot parse {command!r}: {exc}", "fix its quoting"
        )
    program = next((w for w in words if not _ASSIGNMENT.match(w)), "")
    if program and (shutil.which(program) or (root / program).exists()):
        return None
    return Finding(
        "fail",
        f"{kind} check",
        f"{program or command!r} not found on PATH",
        f"install it (in the project's virtualenv) or fix [checks] {kind} in selfforge.toml",
    )


def run_once(command: str, root: Path, timeout_s: float = RUN_TIMEOUT_S) -> Ran:
    """Run ``command`` in a throwaway worktree of HEAD, as the loop runs its checks (the
    checkout itself when there is no commit yet)."""
    from selfforge.judge.runner import anchor_command

    command = anchor_command(command, root)
    has_head = (
        subprocess.run(
            ["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=root, capture_output=True
        ).returncode
        == 0
    )
    with tempfile.TemporaryDirectory(prefix="selfforge-doctor-") as tmp:
        where = Path(tmp) / "tree"
        if has_head:
            subprocess.run(
                ["git", "worktree", "add", "-q", "--detach", str(where), "HEAD"],
                cwd=root,
                capture_output=True,
                check=True,
            )
        else:
            where = root
        try:
            return _run(command, where, timeout_s)
        finally:
            if has_head:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(where)],
                    cwd=root,
                    capture_output=True,
                )


def _run(command: str, cwd: Path, timeout_s: float) -> Ran:
    started = time.monotonic()
    try:
        proc = subprocess.run(
            command,
            shell=True,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return Ran(None, out, time.monotonic() - started, timed_out=True)
    return Ran(proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started)


def count_tests(output: str) -> dict[str, int] | None:
    """passed / failed / … counts from pytest's or unittest's summary; None if neither."""
    if m := _UNITTEST_RAN.search(output):
        ran = int(m[1])
        bad = 0
        if f := _UNITTEST_BAD.search(output):
            bad = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", f[1]))
        skipped = sum(int(n) for n in re.findall(r"skipped=(\d+)", output))
        return {"collected": ran, "passed": ran - bad - skipped, "failed": bad}
    tail = "\n".join(output.strip().splitlines()[-3:])
    counts: dict[str, int] = {}
    for number, word in _PYTEST_COUNT.findall(tail):
        key = "failed" if word.startswith("error") else word
        counts[key] = counts.get(key, 0) + int(number)
    if not counts and "no tests ran" not in tail:
        return None
    counts["collected"] = sum(v for k, v in counts.items() if k != "collected")
    counts.setdefault("passed", 0)
    counts.setdefault("failed", 0)
    return counts


def check_tests(command: str, root: Path, timeout_s: float) -> Finding:
    if missing := program_missing("test", command, root):
        return missing
    ran = run_once(command, root, timeout_s)
    took = f"{ran.seconds:.1f}s"
    if ran.timed_out:
        return Finding(
            "fail",
            "test check",
            f"`{command}` did not finish within {timeout_s:g}s",
            "raise [checks] timeout_s in selfforge.toml, or run fewer tests",
        )
    if ran.exit_code in (126, 127):
        last = (ran.output.strip().splitlines() or [""])[-1]
        return Finding(
            "fail",
            "test check",
            f"`{command}` could not run ({last.strip()})",
            "install what it needs in the project's virtualenv, or fix [checks] test",
        )
    counts = count_tests(ran.output)
    if counts is None:
        status = "warn" if ran.exit_code == 0 else "fail"
        return Finding(
            status,
            "test check",
            f"`{command}` exited {ran.exit_code} in {took}, with no test count in its output",
            "selfforge reads pytest (junit) and `unittest -v` results; point [checks] test at one",
        )
    summary = (
        f"`{command}`: {counts['collected']} collected, {counts['passed']} passed, "
        f"{counts['failed']} failed in {took}"
    )
    if counts["collected"] == 0:
        return Finding(
            "fail", "test check", summary, "it found no tests: point [checks] test at them"
        )
    if counts["passed"] == 0:
        return Finding(
            "fail",
            "test check",
            summary,
            "no test passes on your committed code, so none can catch a regression; "
            "does it need files git ignores, or another environment?",
        )
    if counts["failed"]:
        return Finding("ok", "test check", summary + " (a regression is judged against these)")
    return Finding("ok", "test check", summary)


def check_lint(command: str, root: Path, timeout_s: float) -> Finding:
    from selfforge.judge.lint import parse_lint

    if missing := program_missing("lint", command, root):
        return missing
    ran = run_once(command, root, timeout_s)
    if ran.timed_out or ran.exit_code in (126, 127):
        why = "timed out" if ran.timed_out else f"could not run (exit {ran.exit_code})"
        return Finding("fail", "lint check", f"`{command}` {why}", "fix [checks] lint")
    findings = [f for f in parse_lint(ran.output, ran.exit_code) if f.path]
    return Finding(
        "ok",
        "lint check",
        f"`{command}`: {len(findings)} finding(s) in {ran.seconds:.1f}s "
        "(a candidate may not add any)",
    )


def check_sandbox(directives: Any | None) -> Finding:
    """The sandbox check commands run in, when this selfforge has one."""
    try:
        from selfforge.judge import sandbox  # type: ignore[attr-defined]
    except ImportError:
        return Finding("warn", "sandbox", "this selfforge runs check commands without a sandbox")
    settings = getattr(directives, "sandbox", None)
    if getattr(settings, "mode", "") == "off":
        return Finding(
            "warn",
            "sandbox",
            'off by your choice ([sandbox] mode = "off"): candidate code runs with your rights',
        )
    probe = sandbox.probe()
    if getattr(probe, "ok", False):
        return Finding("ok", "sandbox", str(getattr(probe, "detail", "")))
    fix = getattr(sandbox, "FIX_HINT", "install bubblewrap")
    return Finding("fail", "sandbox", str(getattr(probe, "detail", probe)), fix)
