"""The checks of ``selfforge doctor`` that need the project itself: its virtualenv, its
test and lint commands run once (as the loop would run them: in a worktree of HEAD),
and the sandbox check commands run in. Each finding that fails carries its fix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfforge.cli import suite_advice
from selfforge.errors import SelfforgeError
from selfforge.repo import git

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Finding:
    status: str  # "ok" | "warn" | "fail"
    what: str
    detail: str = ""
    fix: str = ""


# Directives not committed: `check` judges with them (directives are read from the
# working tree, whoever made the change); `run` judges with them too but cannot land.
UNCOMMITTED_DIRECTIVES = "directives (uncommitted)"


def check_repo_state(root: Path) -> list[Finding]:
    """What would stop `run` from judging or landing, before any check runs: no commit
    yet, another run holding the lock; directives not committed (a warning: `check` reads
    them from the working tree as they are, `run` could not land)."""
    from selfforge.repo.workspace import Workspace

    found = []
    if git.head_commit(root) is None:
        found.append(
            Finding(
                "fail",
                "commits",
                "the repository has no commits yet: there is no base to judge a change against",
                "commit your code first (git add -A && git commit -m 'initial'), then retry",
            )
        )
    state = git.head_state(root)
    directives = [p for p in state.dirty if p in ("selfforge.toml", "pyproject.toml")]
    for path in directives:
        tracked = git.ok("ls-files", "--error-unmatch", "--", path, cwd=root)
        what = "has uncommitted changes" if tracked else "is not committed"
        found.append(
            Finding(
                "warn",
                UNCOMMITTED_DIRECTIVES,
                f"{path} {what}: `check` and `run` read it as it is in the working tree, "
                "but with the tree not clean `run` keeps every accepted change on a "
                "selfforge/… branch instead of landing it",
                f"commit it: git add {path} && git commit -m 'selfforge directives'",
            )
        )
    others = [p for p in state.dirty if p not in directives]
    if envs := sorted({e for p in others if (e := _environment(p))}):
        others = [p for p in others if not _environment(p)]
        found.append(
            Finding(
                "warn",
                "environments",
                f"{', '.join(envs)} untracked and not ignored: landing waits for a clean tree",
                "run `selfforge init` (it adds them to .git/info/exclude), or add "
                + " ".join(f"/{e}" for e in envs)
                + " there yourself",
            )
        )
    if others:
        found.append(
            Finding(
                "warn",
                "working tree",
                f"{len(others)} uncommitted change(s) ({', '.join(others[:3])}): accepted "
                "changes are kept on selfforge/… branches until the tree is clean",
                "commit or stash them to let changes land on your branch",
            )
        )
    ws = Workspace(root)
    if ws.lock_is_held():
        holder = ws.lock_holder() or {}
        found.append(
            Finding(
                "fail",
                "run lock",
                f"a run is in progress (pid {holder.get('pid', '?')}: "
                f"{holder.get('command', 'selfforge')}); `selfforge run` would refuse",
                "wait for it to finish (selfforge status) or stop it",
            )
        )
    return found


def _environment(path: str) -> str | None:
    """The environment folder (.venv, node_modules, ...) an untracked path is in."""
    from selfforge.repo.detect import ENV_FOLDERS

    parts = path.split("/")
    at = next((i for i, part in enumerate(parts) if part in ENV_FOLDERS), None)
    return "/".join(parts[: at + 1]) if at is not None else None


def check_venv(root: Path) -> Finding:
    from selfforge.judge.runners import registry
    from selfforge.repo.detect import detect_project

    found = detect_project(root, languages=registry.init_found)
    if found.venv:
        return Finding("ok", "virtualenv", f"{found.venv_kind}: {found.venv}")
    if registry.own_toolchain(found.runner):
        return Finding("ok", "virtualenv", f"none needed ({found.test_source})")
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


def check_tests(
    command: str, root: Path, timeout_s: float, directives: Any | None = None
) -> list[Finding]:
    """Run the test command once, exactly as the baseline does (the same probe, in the
    sandbox): can it judge a candidate here, how many tests, how long; then each nested
    module's suite the command does not run (``check_modules``)."""
    from selfforge.judge.baseline import probe_tests
    from selfforge.judge.sandbox.command import anchor_command

    space = _space("test", command, root, directives)
    if isinstance(space, Finding):
        return [space]
    with worktree_of_head(root) as (tree, head):
        found = probe_tests(anchor_command(command, root), tree, timeout_s, space, head=head)
        advice = suite_advice.of_probe(found, command, root, tree)
        listed = directives.checks.modules if directives is not None else "auto"
        modules = check_modules(command, root, (tree, head), timeout_s, space, found.report, listed)
    if advice is not None:  # a suite that cannot collect cannot judge: a failure
        return [Finding("fail", "test check", advice.said, advice.fix), *modules]
    summary = f"`{command}`: {found.describe()}"
    if found.warning:
        return [Finding("warn", "test check", summary, found.warning), *modules]
    ok = Finding("ok", "test check", summary + " (a regression is judged against these)")
    return [ok, *modules]


def check_modules(
    command: str,
    root: Path,
    at: tuple[Path, str | None],
    timeout_s: float,
    space: Any,
    report: Any,
    listed: str | list[str] = "auto",
) -> list[Finding]:
    """The nested modules ``[checks] modules`` judges (judge/module_suites.py), one line
    each: run by the test command itself, or its own suite run once here, in its folder."""
    from selfforge.judge.baseline import probe_tests
    from selfforge.judge.runners import registry
    from selfforge.judge.sandbox.command import anchor_command

    tree, head = at
    adapter = space.adapter or registry.detect(command, tree, space.runner, space.junit)
    found = []
    for module in registry.modules(adapter, command, tree, listed, report):
        what = f"module {module.dir}"
        if not (tree / module.dir).is_dir():
            fix = "fix [checks] modules in selfforge.toml"
            found.append(Finding("warn", what, "no such folder at HEAD", fix))
            continue
        if module.covered:
            found.append(Finding("ok", what, f"run by the test command: {module.covered}"))
            continue
        own = anchor_command(module.command, root)
        run = f"cd {shlex.quote(module.dir)} && {own}"
        there = registry.detect(module.command, tree / module.dir, space.runner, space.junit)
        space_there = dataclasses.replace(space, adapter=there)
        probe = probe_tests(run, tree, timeout_s, space_there, head=head)
        advice = suite_advice.of_probe(probe, run, root, tree)
        if advice is not None:
            said = f"its suite (`{module.command}` there) cannot judge a change: {advice.said}"
            found.append(Finding("warn", what, said, advice.fix))
            continue
        summary = f"`{module.command}` there: {probe.describe()} (judges a change it touches)"
        found.append(Finding("warn" if probe.warning else "ok", what, summary, probe.warning or ""))
    return found


def _space(kind: str, command: str, root: Path, directives: Any | None) -> Any:
    """Where the loop would run this check (its CheckSpace), or the Finding why not."""
    from selfforge.config import Directives
    from selfforge.run.engine import check_space

    if missing := program_missing(kind, command, root):
        return missing
    try:
        return check_space(directives or Directives(), root)
    except SelfforgeError as exc:
        return Finding("fail", f"{kind} check", f"not run: {exc.message}")


@contextlib.contextmanager
def worktree_of_head(root: Path) -> Iterator[tuple[Path, str | None]]:
    """A throwaway worktree of HEAD (the checkout itself when there is no commit yet)."""
    head = git.head_commit(root)
    if head is None:
        yield root, None
        return
    with tempfile.TemporaryDirectory(prefix="selfforge-doctor-") as tmp:
        where = Path(tmp) / "tree"
        git.git("worktree", "add", "-q", "--detach", str(where), head, cwd=root)
        try:
            yield where, head
        finally:
            git.git("worktree", "remove", "--force", str(where), cwd=root, check=False)


def check_toolchain(root: Path, directives: Any | None) -> Finding | None:
    """For a runner other than pytest/unittest: the program it needs, and what of the
    user's toolchain the sandbox shows it (read-only) or gives it privately."""
    from selfforge.judge.runners import registry

    checks = getattr(directives, "checks", None)
    if checks is None or not checks.test:
        return None
    adapter = registry.detect(checks.test, root, checks.runner, checks.junit or "")
    if adapter.reports_through_channel:
        return None  # Python's: the virtualenv and test checks say it
    program = adapter.program
    if program and shutil.which(program) is None:
        return Finding(
            "fail",
            "toolchain",
            f"the {adapter.name} runner needs `{program}`, which is not on PATH",
            f"install {program}, or fix [checks] test in selfforge.toml",
        )
    prepared = adapter.prepare(checks.test, None, "/tmp/.selfforge-cache")
    where = f"{program}: {shutil.which(program)}" if program else f"{adapter.name} runner"
    shown = ", ".join(str(p) for p in prepared.readable) or "nothing from the home folder"
    private = [k for k, v in prepared.env.items() if v.startswith("/tmp/.selfforge-cache")]
    detail = f"{where}; shown read-only in the sandbox: {shown}"
    if private:
        detail += f"; private caches: {', '.join(private)}"
    return Finding("ok", "toolchain", detail)


def check_home(root: Path, directives: Any | None) -> Finding | None:
    """What of the home folder the sandbox shows the test and lint checks, read-only:
    the exact folders of their toolchains and their runner's needs, nothing else."""
    from dataclasses import replace

    from selfforge.judge.runners import registry
    from selfforge.judge.sandbox import policy
    from selfforge.judge.sandbox.command import anchor_command

    checks = getattr(directives, "checks", None)
    commands = [anchor_command(c, root) for c in (checks.test, checks.lint) if c] if checks else []
    space = _space("test", commands[0], root, directives) if commands else None
    if space is None or isinstance(space, Finding) or not space.sandboxed:
        return None
    shown: set[Path] = set()
    for command in commands:
        needs = registry.detect(command, root, checks.runner, checks.junit or "").home_needs()
        here = replace(space, readable=(*space.readable, *needs))
        shown |= set(policy.shown_in_home(here, command))
    home = Path.home().resolve()
    names = ", ".join("~/" + p.relative_to(home).as_posix() for p in sorted(shown))
    return Finding(
        "ok",
        "home in the sandbox",
        f"shown read-only: {names or 'nothing'}; nothing else of {home} is visible to checks",
    )


def check_lint(
    command: str, root: Path, timeout_s: float, directives: Any | None = None
) -> Finding:
    """Run the lint command once, in the sandbox, as the loop does."""
    from selfforge.judge.rules.lint import parse_lint
    from selfforge.judge.sandbox.command import anchor_command, run_command

    space = _space("lint", command, root, directives)
    if isinstance(space, Finding):
        return space
    with worktree_of_head(root) as (tree, head):
        ran = run_command(anchor_command(command, root), tree, timeout_s, space, head=head)
    if ran.timed_out or ran.exit_code in (126, 127):
        why = "timed out" if ran.timed_out else f"could not run (exit {ran.exit_code})"
        return Finding("fail", "lint check", f"`{command}` {why}", "fix [checks] lint")
    findings = [f for f in parse_lint(ran.full_output, ran.exit_code) if f.path]
    return Finding(
        "ok",
        "lint check",
        f"`{command}`: {len(findings)} finding(s) in {ran.duration_s:.1f}s "
        "(a candidate may not add any)",
    )


def check_sandbox(directives: Any | None) -> Finding:
    """The sandbox check commands run in, and each of its limits."""
    from selfforge.judge.sandbox import bwrap as sandbox
    from selfforge.judge.sandbox.limits import enforcement

    settings = getattr(directives, "sandbox", None)
    if getattr(settings, "mode", "") == "off":
        return Finding(
            "warn",
            "sandbox",
            'off by your choice ([sandbox] mode = "off"): candidate code runs with your rights',
            'remove mode = "off" from [sandbox] to run checks in the sandbox',
        )
    probe = sandbox.probe()
    if not probe.ok:
        return Finding("fail", "sandbox", probe.detail, sandbox.FIX_HINT)
    sb = settings
    limits = (
        f"network {'on' if sb.network else 'off'}, memory {sb.memory_mb} MB, "
        f"{sb.processes} processes, output {sb.output_kb} KB, /tmp {sb.tmp_mb} MB "
        f"(enforced by {enforcement()})"
        if sb is not None
        else f"default limits (enforced by {enforcement()})"
    )
    caps = f"capabilities inside: none (CapEff {probe.capabilities})"
    masked = sandbox.credentials_in(sandbox.runtime_roots())
    home = str(Path.home())
    shown = ", ".join(str(p).replace(home, "~", 1) for p in masked[:4])
    creds = f"credentials masked in shown toolchains: {len(masked)}" + (
        f" ({shown}{', …' if len(masked) > 4 else ''})" if masked else ""
    )
    from selfforge.judge.runners.channel import MAX_BYTES, MAX_CONNECTIONS, MAX_RECORDS

    channel = (
        f"results channel: the plugin's secret required, at most {MAX_CONNECTIONS} "
        f"connections, {MAX_BYTES // 2**20} MiB, {MAX_RECORDS:,} records"
    )
    return Finding("ok", "sandbox", f"{probe.detail}; {caps}; {creds}; {channel}; {limits}")


def check_resident() -> Finding:
    """Whether a resident selfforge runs, and whether the next quick command starts one
    (``cli/launch.py``: started on first use, not on CI, as SELFFORGE_RESIDENT says)."""
    import os

    from selfforge.cli import launch

    answer = launch.ask("ping")
    mode = os.environ.get("SELFFORGE_RESIDENT", "")
    if mode == "0":
        return Finding("ok", "resident", "off (SELFFORGE_RESIDENT=0): each command starts anew")
    if answer and answer.get("ok"):
        return Finding(
            "ok",
            "resident",
            f"running (pid {answer['pid']}, {answer['served']} command(s) served, "
            f"socket {answer['socket']}): commands start in tens of milliseconds",
        )
    if launch.starts_resident(["check"], os.environ):
        why = "the next quick command (check, log, show, …) starts one"
    elif mode == "1":
        why = "SELFFORGE_RESIDENT=1 uses one but starts none: `selfforge resident start`"
    else:
        why = "not started on CI (CI is set; SELFFORGE_RESIDENT=auto starts one anyway)"
    return Finding("ok", "resident", f"not running; {why}")


def check_measures(root: Path, directives: Any | None) -> list[Finding]:
    """Each declared measure run once on HEAD, as `selfforge measure` would: its value,
    or why it gives none."""
    from selfforge.measure.kinds import unit_of
    from selfforge.measure.sample import MeasureError, Side, measure_once, show
    from selfforge.run.engine import check_space

    measures = list(directives.measures) if directives is not None else []
    if not measures:
        return []
    try:
        space = check_space(directives, root)
    except SelfforgeError as exc:
        return [Finding("fail", "measures", f"not run: {exc.message}")]
    found = []
    with worktree_of_head(root) as (tree, head):
        for m in measures:
            try:
                run = measure_once(m, directives, Side(head or "HEAD", tree), space, root)
            except MeasureError as exc:
                fix = "fix the measure's command in selfforge.toml ([[measures]])"
                found.append(Finding("fail", f"measure {m.name}", exc.message, fix))
                continue
            value = show(run.value, unit_of(m))
            found.append(Finding("ok", f"measure {m.name}", f"{value} ({run.seconds:.1f} s)"))
    return found
