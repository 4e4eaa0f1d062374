"""Runs one check command on one tree: sandboxed, limited, its results kept honest.

Each command runs in its own session inside the sandbox (``sandbox.py``), with the
limits of ``limits.py``, an output cap, and a timeout that kills the whole tree. A
pytest command gets selfforge's result plugin and a channel to report through; the
tree's own import roots come first on ``PYTHONPATH`` so the tests import the candidate,
never the user's checkout or an installed copy. Output is secret-scrubbed and trimmed
head and tail with a note of what was cut.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.judge.runners import registry
from selfforge.judge.runners.base import Adapter
from selfforge.judge.runners.channel import Channel
from selfforge.judge.runners.coverage import INSIDE_DIR as COVERAGE_INSIDE
from selfforge.judge.runners.coverage import Lines, TooMuch
from selfforge.judge.runners.import_roots import import_roots, project_modules
from selfforge.judge.runners.results import PLUGIN, TestReport, parse_unittest
from selfforge.judge.sandbox import buildcache, check_git
from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox.check_space import CheckSpace
from selfforge.judge.sandbox.limits import Guard
from selfforge.judge.sandbox.policy import check_policy
from selfforge.judge.sandbox.quota import DiskWatch
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
    full_output: str = field(default="", repr=False)  # masked, untrimmed, for parsers
    limit: str | None = None  # the limit the command ran into: memory, processes, output


def run_command(
    command: str,
    cwd: Path,
    timeout_s: float,
    space: CheckSpace,
    *,
    extra_env: dict[str, str] | None = None,
    on_start: object = None,
    channel: Channel | None = None,
    head: str | None = None,
    binds: tuple[sandbox.Bind, ...] = (),
) -> CommandResult:
    """Run a shell command on the tree ``cwd``; ``head`` is the commit the tree holds.
    A ``channel``'s secret descriptor is passed on (to selfforge's plugin); ``binds``
    are mounts beyond the check's own (an agent proposer's configuration folder)."""
    with contextlib.ExitStack() as stack:
        caches = buildcache.for_check(space, cwd, command, check_git.scratch_dir(cwd))
        stack.callback(caches.remove)
        if space.sandboxed:
            sandbox.require()
            env = sandbox.check_env(space.env_names)
            argv = ["/bin/sh", "-c", command]
            if not sandbox.inside():
                policy = check_policy(space, cwd, command, channel, head)
                policy = dataclasses.replace(policy, binds=(*policy.binds, *caches.binds, *binds))
                prelude = check_git.prelude(policy.binds) + caches.prelude
                argv = sandbox.bwrap_argv(policy, ["/bin/sh", "-c", prelude + command], cwd)
        else:
            env = scrub_env(os.environ)
            argv = ["/bin/sh", "-c", command]
        env.update(extra_env or {})
        env.update(caches.env)
        env.update({k: v.replace("{tree}", str(cwd)) for k, v in space.provided_env})
        guard = Guard(space.limits)
        stack.callback(guard.cleanup)
        fds = (channel.secret_fd,) if channel is not None else ()
        return _execute(command, argv, cwd, env, timeout_s, space, guard, on_start, fds)


def _execute(
    command: str,
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    space: CheckSpace,
    guard: Guard,
    on_start: object,
    pass_fds: tuple[int, ...] = (),
) -> CommandResult:
    cap = space.output_kb * 1024
    started = time.monotonic()
    # No preexec_fn: without one, Popen uses vfork, far cheaper from a large process.
    # A tiny shell joins the check's control groups (or sets the rlimits) and execs.
    proc = subprocess.Popen(
        [*guard.prelude(), *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    if callable(on_start):
        on_start(proc.pid)
    disk = DiskWatch(cwd, space.disk_mb, proc.pid)
    sink = bytearray()
    over = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        total = 0
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            total += len(chunk)
            if len(sink) < cap:
                sink.extend(chunk[: cap - len(sink)])
            if total > cap and not over.is_set():
                over.set()
                _kill(proc.pid)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    # A blocking wait in a thread: Popen.wait(timeout) polls with sleeps, which would add
    # tens of milliseconds to every check.
    done = threading.Event()
    threading.Thread(target=lambda: (proc.wait(), done.set()), daemon=True).start()
    timed_out = not done.wait(timeout_s)
    _kill(proc.pid)  # also what the command left running in the background
    proc.wait()
    reader.join(timeout=5)
    disk_hit = disk.stop()
    if callable(on_start):
        on_start(None)
    raw = mask(bytes(sink).decode("utf-8", errors="replace"))
    duration = time.monotonic() - started
    output = trim(raw)
    limit = "output" if over.is_set() else "disk" if disk_hit else None
    if timed_out:
        output += f"\n[killed: no result within the {timeout_s:g} s timeout]"
    elif limit is None and proc.returncode != 0:
        limit = guard.hit(raw)  # read before the groups are removed
    guard.cleanup()
    if limit:
        output += "\n[killed: " + _limit_text(limit, space) + "]"
    exit_code = None if timed_out else proc.returncode
    return CommandResult(command, exit_code, timed_out, duration, output, raw, limit)


def _limit_text(limit: str, space: CheckSpace) -> str:
    values = {
        "memory": f"the memory limit ({space.limits.memory_mb} MB, [sandbox] memory_mb)",
        "processes": f"the processes limit ({space.limits.processes}, [sandbox] processes)",
        "output": f"the output limit ({space.output_kb} KB, [sandbox] output_kb)",
        "disk": f"the disk limit ({space.disk_mb} MB written to the tree, [sandbox] disk_mb)",
    }
    return "hit " + values.get(limit, limit)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# --- tests --------------------------------------------------------------------------------


def run_tests(
    command: str,
    cwd: Path,
    timeout_s: float,
    space: CheckSpace,
    *,
    on_start: object = None,
    only: list[str] | None = None,
    ignore: list[str] | None = None,
    head: str | None = None,
    adapter: Adapter | None = None,
    coverage_of: list[str] | None = None,
    repeat: dict[str, tuple[int, str]] | None = None,
) -> tuple[CommandResult, TestReport | None]:
    """Run the test command on the tree ``cwd``; per-test results when it can tell them.

    ``only`` narrows the run to those test files or test ids (pytest); ``ignore`` leaves
    files out (a candidate's new tests, which must not share a process with the tests
    that judge it). Both are given to selfforge's plugin, not to the command line, so the
    pytest runs the tests start themselves never see them. ``adapter``: the runner the
    check detected once (``registry.detect``), else detected here. ``coverage_of``:
    the changed code files (repo-relative) whose lines the run measures, where the
    runner can (``report.coverage``: judge/coverage.py). ``repeat``: tests of ``only`` the
    run itself reruns until their outcome differs from the one given, so many times at
    most (``adapter.repeats()``), reporting the last.
    """
    adapter = adapter or registry.for_space(space, command, cwd)
    with _Coverage(adapter, cwd, space, coverage_of) as cov:
        if not adapter.reports_through_channel:
            ran = _run_adapter(
                adapter, command, cwd, timeout_s, space, on_start, only, head, cov, repeat
            )
        else:
            ran = _run_channel(
                command, cwd, timeout_s, space, on_start, only, ignore, head, cov, repeat
            )
        if ran[1] is not None and cov.files:
            ran[1].coverage = cov.read()
            if ran[1].coverage is None and (why := adapter.unmeasured(ran[1])):
                ran[1].coverage = Lines(adapter.coverage_tool, note=why)
    return ran


class _Coverage:
    """Where one run writes its coverage: a fresh folder of the judge's (in the run's
    scratch folder), shown writable inside the sandbox at ``COVERAGE_INSIDE`` and read
    once the run has ended; removed after. Nothing when the runner measures none."""

    def __init__(
        self, adapter: Adapter, tree: Path, space: CheckSpace, files: list[str] | None
    ) -> None:
        self.adapter, self.tree = adapter, tree
        self.files = list(files or []) if adapter.coverage_tool else []
        self.host: Path | None = None
        self.binds: tuple[sandbox.Bind, ...] = ()
        self.seen = ""  # the folder as the run sees it
        if self.files:
            self.host = Path(tempfile.mkdtemp(prefix="coverage-", dir=check_git.scratch_dir(tree)))
            for name, text in adapter.coverage_files().items():
                (self.host / name).write_text(text, encoding="utf-8")
                (self.host / name).chmod(0o755)
            inside = space.sandboxed and not sandbox.inside()
            self.seen = COVERAGE_INSIDE if inside else str(self.host)
            if inside:
                self.binds = (sandbox.Bind(self.host, Path(COVERAGE_INSIDE), writable=True),)

    def __enter__(self) -> _Coverage:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.host is not None:
            shutil.rmtree(self.host, ignore_errors=True)

    def env(self) -> dict[str, str]:
        return self.adapter.coverage_env(self.seen, self.files, self.tree) if self.files else {}

    def read(self) -> Lines | None:
        if self.host is None:
            return None
        try:
            return self.adapter.read_coverage(self.host, self.files, self.tree)
        except TooMuch as too_much:
            return Lines(self.adapter.coverage_tool, note=str(too_much))
        except Exception:  # what the run wrote is hostile input: unreadable, not measured
            return None


def _run_channel(
    command: str,
    cwd: Path,
    timeout_s: float,
    space: CheckSpace,
    on_start: object,
    only: list[str] | None,
    ignore: list[str] | None,
    head: str | None,
    cov: _Coverage,
    repeat: dict[str, tuple[int, str]] | None = None,
) -> tuple[CommandResult, TestReport | None]:
    """pytest (and what starts it), unittest: selfforge's plugin and results channel."""
    roots = [str(p) for p in import_roots(cwd)]
    pythonpath = os.pathsep.join(roots)
    command = keep_pythonpath(command)
    # Every test command gets the plugin and the channel: whatever starts pytest (a script,
    # make, nox, hatch, uv, a nested runner) reports through it; unittest's output is read.
    channel = Channel(check_git.scratch_dir(cwd))
    try:
        config = {
            "only": [_absolute(cwd, t) for t in only or []],
            "ignore": [str(cwd / p) for p in ignore or []],
            "modules": project_modules(cwd),
        }
        if repeat:
            config["repeat"] = {_absolute(cwd, t): [n, o] for t, (n, o) in repeat.items()}
        if cov.files:
            config["coverage"] = {"dir": cov.seen, "include": [str(cwd / f) for f in cov.files]}
        inside = space.sandboxed and not sandbox.inside()
        passed_on = "PYTEST_ADDOPTS" in space.env_names or not space.sandboxed
        user_addopts = os.environ.get("PYTEST_ADDOPTS", "") if passed_on else ""
        env = {
            "PYTHONPATH": os.pathsep.join([pythonpath, channel.plugin_path(inside)]),
            "SELFFORGE_JUDGE_SOCKET": channel.socket_path(inside),
            "SELFFORGE_JUDGE_FD": str(channel.secret_fd),
            "SELFFORGE_JUDGE_CONFIG": json.dumps(config),
            "SELFFORGE_JUDGE_USER_ADDOPTS": user_addopts,
            "PYTEST_ADDOPTS": f"{user_addopts} -p {PLUGIN} -p no:cacheprovider".strip(),
        }
        result = run_command(
            command,
            cwd,
            timeout_s,
            space,
            extra_env=env,
            on_start=on_start,
            channel=channel,
            head=head,
            binds=cov.binds,
        )
    finally:
        channel.close()
    return result, channel.report(cwd) or parse_unittest(result.full_output)


def _run_adapter(
    adapter: Adapter,
    command: str,
    cwd: Path,
    timeout_s: float,
    space: CheckSpace,
    on_start: object,
    only: list[str] | None,
    head: str | None,
    cov: _Coverage,
    repeat: dict[str, tuple[int, str]] | None = None,
) -> tuple[CommandResult, TestReport | None]:
    """A runner other than pytest/unittest: its own flags and toolchain folders, its
    results read back from its output (or its report file) by the adapter."""
    channel = Channel(check_git.scratch_dir(cwd))  # carries selfforge's reporters in
    adapter = copy.copy(adapter)  # the carried one is shared by the checks that run at once
    adapter.repeat = repeat if repeat and adapter.repeats() else None
    try:
        inside = space.sandboxed and not sandbox.inside()
        adapter.inject_dir = channel.plugin_path(inside)
        scratch = "/tmp/.selfforge-cache" if inside else str(channel.dir / "cache")
        prepared = adapter.prepare(command, only if adapter.can_select() else None, scratch)
        shown = dataclasses.replace(
            space,
            readable=(*space.readable, *prepared.readable),
            output_kb=max(space.output_kb, prepared.output_kb),
        )
        env = dict(prepared.env)
        for name, value in cov.env().items():  # GOFLAGS: the runner's flags, then these
            env[name] = f"{env[name]} {value}" if env.get(name) else value
        result = run_command(
            prepared.command,
            cwd,
            timeout_s,
            shown,
            extra_env=env,
            on_start=on_start,
            channel=channel,
            head=head,
            binds=cov.binds,
        )
    finally:
        channel.close()
    return result, adapter.parse(result.full_output, cwd)


_PYTHONPATH_SET = re.compile(r"(?<![\w$])PYTHONPATH=((?:\"[^\"]*\"|'[^']*'|[^\s;&|)])*)")


def keep_pythonpath(command: str) -> str:
    """A command that sets PYTHONPATH itself (``PYTHONPATH=src python -m pytest``, the
    usual src layout) keeps its value and gets selfforge's paths after it: the tree's
    import roots and the judge's plugin, without which pytest cannot load the plugin."""
    return _PYTHONPATH_SET.sub(
        lambda m: f"PYTHONPATH={m.group(1)}${{PYTHONPATH:+:$PYTHONPATH}}", command
    )


def _absolute(root: Path, test: str) -> str:
    path, sep, rest = test.partition("::")
    return f"{root / path}{sep}{rest}"


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
