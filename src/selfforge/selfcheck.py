"""Extra care when selfforge improves its own repository.

Before a change to selfforge lands, the candidate is installed into an isolated virtual
environment and must complete a smoke run: the demo scenario, end to end, verified by
the running (trusted) code, not by anything the candidate prints. Landed self-changes
become the last known good commit; ``selfforge rollback`` restores it.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tempfile
import tomllib
import venv
from pathlib import Path

from selfforge import checks, git
from selfforge.errors import UsageError
from selfforge.gates import Verdict
from selfforge.journal import Journal
from selfforge.workspace import Workspace, recover

LAST_GOOD = "last_known_good"
SMOKE_TIMEOUT_S = 180.0


def is_self_repo(root: Path) -> bool:
    """The target is selfforge's own source: a pyproject naming the project selfforge."""
    path = root / "pyproject.toml"
    if not (path.is_file() and (root / "src" / "selfforge").is_dir()):
        return False
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return False
    return data.get("project", {}).get("name") == "selfforge"


def smoke_env(state: Path, candidate: Path) -> Path:
    """A venv (made once per repository) whose selfforge is the candidate's source.

    The venv sees this interpreter's installed dependencies, but its selfforge comes only
    from ``candidate/src``: the path file lists it first, and the dependencies' folders
    are listed as plain paths, so the running selfforge's own install is not visible.
    """
    env_dir = state / "smoke-venv"
    python = env_dir / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=False, clear=True, symlinks=True).create(env_dir)
    site_dir = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    lines = [str(candidate / "src"), *deps]
    (site_dir / "selfforge-candidate.pth").write_text("\n".join(lines) + "\n")
    return python


def smoke_run(candidate: Path, state: Path, timeout_s: float = SMOKE_TIMEOUT_S) -> Verdict:
    """Run ``selfforge demo --replay`` with the candidate's code; check what it did."""
    python = smoke_env(state, candidate)
    with tempfile.TemporaryDirectory(prefix="selfforge-smoke-") as tmp:
        command = f"{_q(python)} -m selfforge demo --replay --dir {_q(tmp)}"
        result = checks.run_command(command, Path(tmp), timeout_s)
        if result.exit_code != 0:
            why = "timed out" if result.timed_out else f"exited {result.exit_code}"
            return _fail(f"`selfforge demo` {why} with the candidate's code", result.output)
        projects = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(projects) != 1:
            return _fail("the demo made no sample project", result.output)
        return _verify_demo(projects[0], python, result.output)


def _verify_demo(project: Path, python: Path, output: str) -> Verdict:
    log = subprocess.run(
        [python, "-m", "selfforge", "log", "--json", "--repo", str(project)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        outcomes = [a["outcome"] for a in json.loads(log.stdout)]
    except (json.JSONDecodeError, TypeError, KeyError):
        return _fail("`selfforge log --json` did not print the attempts", log.stdout + log.stderr)
    if "rejected" not in outcomes or "accepted" not in outcomes:
        return _fail(
            f"the demo's attempts were {outcomes}, not one rejected and one accepted", output
        )
    # Judged by the running code: the sample project's own tests must pass now.
    tests = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if tests.returncode != 0:
        return _fail("after the demo, the sample project's tests still fail", tests.stderr)
    commits = git.git("rev-list", "--count", "HEAD", cwd=project).strip()
    if commits != "2":
        return _fail(
            f"the demo left {commits} commits, expected the initial one and the fix", output
        )
    return Verdict(True, "smoke run passed: the demo rejected one candidate and landed one")


def _fail(reason: str, output: str) -> Verdict:
    reason = f"smoke run failed: {reason}"
    return Verdict(False, reason, f"{reason}. The demo's output:\n{checks.trim(output)}")


def _q(path: Path | str) -> str:
    import shlex

    return shlex.quote(str(path))


# --- last known good and rollback ---------------------------------------------------------


def remember_good(journal: Journal, commit: str) -> None:
    journal.set_meta(LAST_GOOD, commit)


def rollback(ws: Workspace) -> str:
    """Restore the last known good tree as a new commit on top of HEAD (no history lost)."""
    with ws.locked("selfforge rollback"), Journal(ws.state / "journal.db") as journal:
        recover(ws, journal)
        good = journal.get_meta(LAST_GOOD)
        if good is None:
            raise UsageError(
                "no last known good commit is recorded; it is set when "
                "selfforge runs on its own repository"
            )
        head = git.git("rev-parse", "HEAD", cwd=ws.root).strip()
        if git.git("rev-parse", f"{good}^{{tree}}", cwd=ws.root) == git.git(
            "rev-parse", "HEAD^{tree}", cwd=ws.root
        ):
            return f"nothing to roll back: HEAD already has the tree of {good[:10]}"
        env = {**os.environ, **git.identity_env(ws.root)}
        message = f"selfforge rollback to last known good {good[:10]}"
        commit = subprocess.run(
            ["git", "commit-tree", f"{good}^{{tree}}", "-p", head, "-m", message],
            cwd=ws.root,
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.strip()
        result = ws.land(commit=commit, base_commit=head, mode="merge", name="rollback")
        ws.remove_worktrees()
    return result.message
