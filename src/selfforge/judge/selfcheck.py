"""Extra care when selfforge improves its own repository.

The verdict on a self-change always comes from the installed, running selfforge; the
candidate's code is only ever run, in the sandbox. Before a self-change lands, the
candidate version must (1) complete the demo, one candidate rejected and one landed, then
a rename its measure refused and a speed-up landed with its figures, and (2) still
refuse a set of known-bad candidates (a regression, a protected path, a skipped test in a
package, no progress, a forged exit, a check that reads selfforge's
environment: refused only when the candidate's checks run sandboxed). What it did is
read back by the running code from the journals and git repositories it left, never
from its output.
"""

from __future__ import annotations

import contextlib
import json
import site
import sqlite3
import subprocess
import tempfile
import tomllib
import venv
from dataclasses import replace
from pathlib import Path

from selfforge.errors import UsageError
from selfforge.journal.store import Journal
from selfforge.judge.sandbox import probe as sandbox_probe
from selfforge.judge.sandbox.command import CheckSpace, run_command, trim
from selfforge.judge.scenarios import KNOWN_BAD, PROBE_VALUE, PROBE_VAR, Scenario, write_scenario
from selfforge.judge.verdict import Outcome, Verdict
from selfforge.repo import git

LAST_GOOD = "last_known_good"
SMOKE_TIMEOUT_S = 300.0


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

    It sees this interpreter's installed dependencies, but its selfforge comes only from
    ``candidate/src``: the path file lists it first.
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


def smoke_run(
    candidate: Path, state: Path, space: CheckSpace, timeout_s: float = SMOKE_TIMEOUT_S
) -> Verdict:
    """Run the candidate's selfforge on the demo and the known-bad set; check the results."""
    python = smoke_env(state, candidate)
    space = replace(space, readable=(*space.readable, state / "smoke-venv", candidate / "src"))
    with tempfile.TemporaryDirectory(prefix="selfforge-smoke-") as tmp:
        out = Path(tmp)
        (out / "demo").mkdir()
        lines = [f"{_q(python)} -m selfforge demo --replay --dir {_q(out / 'demo')}"]
        for scenario in KNOWN_BAD:
            repo, script = write_scenario(scenario, out, python)
            lines.append(
                f"{_q(python)} -m selfforge run --repo {_q(repo)} --model script:{_q(script)}"
                f" --cycles 1 --parallel {scenario.parallel} --json > /dev/null 2>&1"
            )
        probe = sandbox_probe.command(python, out / "sandbox-probe.json", out / KNOWN_BAD[0].name)
        lines.append(probe)
        # The candidate's selfforge holds a variable its sandboxed checks must not see. The
        # sample projects use no pytest plugin: those this Python has installed (~1.5 s of
        # imports a run) stay unloaded; the judge's own is named with -p and loads.
        script_text = (
            f"export {PROBE_VAR}={PROBE_VALUE}\nexport PYTEST_DISABLE_PLUGIN_AUTOLOAD=1\n"
            "set -e\n" + "\n".join(lines[:1]) + "\nset +e\n" + "\n".join(lines[1:])
        )
        (out / "smoke.sh").write_text(script_text + "\n")
        result = run_command(f"sh {_q(out / 'smoke.sh')}", out, timeout_s, space)
        if result.exit_code != 0:
            why = "timed out" if result.timed_out else f"exited {result.exit_code}"
            return _fail(f"`selfforge demo` {why} with the candidate's code", result.output)
        verdict = _verify_demo(_project(out / "demo"), space, result.output)
        if not verdict.ok:
            return verdict
        # Every scenario is read, and each one the candidate got wrong is named: a person
        # sees at once all the rules a change broke, not the first.
        wrong = [why for scenario in KNOWN_BAD if (why := _misjudged(scenario, out))]
        verdict = sandbox_probe.verify(out / "sandbox-probe.json")
        if not verdict.ok:
            wrong.append(verdict.reason)
        if wrong:
            return _fail("; ".join(wrong), result.output)
    n = len(KNOWN_BAD)
    return Verdict(
        True,
        f"smoke run passed: the demo worked, {n} known-bad changes were refused each by its "
        "rule, and the candidate still builds the sandbox",
    )


def _misjudged(scenario: Scenario, out: Path) -> str:
    """Why the candidate's selfforge got ``scenario`` wrong, or "" when it refused it by
    its rule."""
    attempts = _outcomes(out / scenario.name)
    outcomes = [outcome for outcome, _ in attempts]
    refused = outcomes == [Outcome.REJECTED] * scenario.parallel
    if not refused or _commits(out / scenario.name) != 1:
        return (
            f"the candidate's selfforge did not refuse a known-bad change "
            f"({scenario.name}: {scenario.what}); its attempts were {outcomes}"
        )
    reason = attempts[0][1] or ""  # the first candidate's (a twin says "the same")
    if scenario.expect not in reason:
        return (
            f"the candidate's selfforge refused {scenario.name} ({scenario.what}) "
            f"but not by its rule: expected {scenario.expect!r}, got {reason!r}"
        )
    return ""


def _project(folder: Path) -> Path:
    """The demo's project: the folder itself, or the one folder it made inside."""
    if (folder / ".git").exists():
        return folder
    made = [p for p in folder.iterdir() if p.is_dir()]
    return made[0] if len(made) == 1 else folder


def _outcomes(repo: Path) -> list[tuple[str, str]]:
    """Attempt outcomes and reasons from a journal, read by the running code (read-only)."""
    path = repo / ".selfforge" / "journal.db"
    if not path.is_file():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            rows = db.execute("SELECT outcome, reason FROM attempts ORDER BY id")
            return [(str(r[0]), str(r[1] or "")) for r in rows]
        except sqlite3.Error:
            return []


def _commits(repo: Path) -> int:
    out = git.git("rev-list", "--count", "HEAD", cwd=repo, check=False).strip()
    return int(out) if out.isdigit() else -1


def _verify_demo(project: Path, space: CheckSpace, output: str) -> Verdict:
    attempts = _outcomes(project)
    outcomes = [outcome for outcome, _ in attempts]
    if outcomes != [Outcome.REJECTED, Outcome.ACCEPTED] * 2:
        return _fail(
            f"the demo's attempts were {outcomes}, not one rejected and one accepted, then "
            "a rename its measure refused and a speed-up it landed",
            output,
        )
    if "measure dedupe: " not in attempts[3][1] or ": improved" not in attempts[3][1]:
        return _fail(f"the demo's speed-up landed without its figures: {attempts[3][1]!r}", output)
    # Judged by the running code: the sample project's own tests must pass now.
    tests = run_command("python3 -m unittest -q", project, 60, space)
    if tests.exit_code != 0:
        return _fail("after the demo, the sample project's tests still fail", tests.output)
    commits = _commits(project)
    if commits != 3:
        return _fail(
            f"the demo left {commits} commits, expected the initial one, the fix and the speed-up",
            output,
        )
    return Verdict(True, "the demo rejected one candidate and landed one, twice")


def _fail(reason: str, output: str) -> Verdict:
    reason = f"smoke run failed: {reason}"
    return Verdict(False, reason, f"{reason}. The output:\n{trim(output)}")


def _q(path: Path | str) -> str:
    import shlex

    return shlex.quote(str(path))


# --- last known good and rollback ---------------------------------------------------------


def remember_good(journal: Journal, commit: str, root: Path) -> None:
    """Record the commit and its tree, so rollback can tell a planted record."""
    tree = git.git("rev-parse", f"{commit}^{{tree}}", cwd=root).strip()
    journal.set_meta(LAST_GOOD, json.dumps({"commit": commit, "tree": tree}))


def last_good(journal: Journal, root: Path) -> str | None:
    """The last known good commit, verified against the tree recorded with it."""
    raw = journal.get_meta(LAST_GOOD)
    if raw is None:
        return None
    try:
        record = json.loads(raw)
        commit, tree = record["commit"], record["tree"]
    except (ValueError, KeyError, TypeError):
        raise UsageError(
            "the last known good record in the journal is not one selfforge wrote; "
            "inspect .selfforge/journal.db"
        ) from None
    actual = git.git("rev-parse", "-q", "--verify", f"{commit}^{{tree}}", cwd=root, check=False)
    if actual.strip() != tree:
        raise UsageError(
            f"the last known good commit {commit[:10]} does not hold the tree selfforge "
            "recorded for it; refusing to roll back to it"
        )
    return commit
