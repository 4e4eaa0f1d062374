"""What ``selfforge init`` does beyond detection (``detect.py``): it runs each test
command it found once, in the sandbox and a worktree of HEAD as checks run, and keeps the
first that starts and collects (a ``make test`` that cannot run offline gives way to
``go test ./...``, tox's command to plain pytest); when none does, it writes none (the
first commented out) and says, per command, what it said and the fix. It keeps the
project's untracked environments (``.venv``, ``node_modules``, ...) out of git through
``.git/info/exclude``, never the user's ``.gitignore``, so that they neither block
landing nor count as uncommitted changes.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from selfforge.cli.suite_advice import Advice, node_not_installed, of_probe
from selfforge.errors import SelfforgeError
from selfforge.repo import git
from selfforge.repo.detect import ENV_FOLDERS, Candidate, Project


@dataclass(frozen=True)
class Tried:
    candidate: Candidate
    problem: str | None  # why it cannot judge a change here; None: it can
    summary: str = ""  # what it ran: collected, passed, failed
    fix: str = ""  # what to do about the problem
    note: str = ""  # what its runner cannot do that another command's could (Adapter.caveat)


@dataclass
class Trial:
    chosen: Candidate | None  # the command to write: it ran here, or nothing could be run
    tried: list[Tried] = field(default_factory=list)
    not_run: str = ""  # why nothing was run (no sandbox): the first is written untried
    first: Candidate | None = None  # the best found, written commented out when none ran

    @property
    def none_ran(self) -> bool:
        return self.chosen is None and bool(self.tried)


def choose_test(project: Project, root: Path) -> Trial:
    """The first of the project's test commands that runs and collects here (failing
    tests are fine), with the project's PATH (``detect.project_path``); when none does,
    none: a command that cannot judge a change would only fail every check later, and
    ``init`` says what each said and how to fix it. Without a sandbox to try them in,
    the first, untried (``doctor`` fails on the sandbox)."""
    from selfforge.cli.doctor import worktree_of_head
    from selfforge.config import Directives
    from selfforge.repo.detect import project_path
    from selfforge.run.engine import check_space

    if not project.candidates:
        return Trial(None)
    first = project.candidates[0]
    try:
        check_space(Directives(), root)  # the sandbox works here, or why not
    except SelfforgeError as exc:
        return Trial(first, not_run=exc.message, first=first)
    trial = Trial(None, first=first)
    with _path(project_path(project)), worktree_of_head(root) as (tree, head):
        for candidate in project.candidates:
            trial.tried.append(tried := _try(candidate, root, tree, head))
            if tried.problem is None:
                trial.chosen = candidate
                return trial
    return trial


@contextlib.contextmanager
def _path(path: str) -> Iterator[None]:
    """This process's PATH, which checks inherit, set to ``path`` for a while."""
    saved = os.environ.get("PATH")
    os.environ["PATH"] = path
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = saved


def _try(candidate: Candidate, root: Path, tree: Path, head: str | None) -> Tried:
    """Run one candidate once, as a check would (same sandbox, same timeout as the
    ``timeout_s`` written), unless it plainly cannot start."""
    from selfforge.cli.doctor import program_missing
    from selfforge.config import Directives
    from selfforge.judge.baseline import probe_tests
    from selfforge.judge.runners import registry
    from selfforge.judge.sandbox.command import anchor_command
    from selfforge.run.engine import check_space

    if missing := program_missing("test", candidate.test, root):
        return Tried(candidate, missing.detail, fix=missing.fix)
    if not_installed := _not_installed(candidate.test, root):
        return Tried(candidate, not_installed.said, fix=not_installed.fix)
    d = Directives(checks={"runner": candidate.results, "junit": candidate.junit})
    command, timeout = anchor_command(candidate.test, root), d.checks.timeout_s
    found = probe_tests(command, tree, timeout, check_space(d, root), head=head)
    advice = of_probe(found, candidate.test, root, tree)
    if advice is None:
        adapter = registry.detect(command, tree, candidate.results, candidate.junit or "")
        note = adapter.caveat(found.report) if found.report is not None else ""
        return Tried(candidate, None, found.describe(), note=note)
    said = advice.said.removeprefix(f"the test command `{candidate.test}`").lstrip(": ")
    return Tried(candidate, said, found.describe(), advice.fix)


def _not_installed(command: str, root: Path) -> Advice | None:
    """``npx TOOL`` whose package the project has not installed: npx would try to fetch
    it, which a check cannot (no network) and which takes a minute to fail."""
    m = re.search(r"(?:^|\s)npx\s+([\w@./-]+)", command)
    if m is None or (root / "node_modules" / ".bin" / m.group(1)).exists():
        return None
    if absent := node_not_installed(root):
        return absent
    return Advice(
        f"{m.group(1)} is not installed in node_modules (npx would fetch it; checks have no "
        "network)",
        "run `npm install` (it installs the project's devDependencies)",
    )


def exclude_environments(root: Path) -> list[str]:
    """Add the checkout's untracked environments to .git/info/exclude; the patterns
    added (anchored paths, no trailing slash: a ``.venv`` that is a link matches too)."""
    listed = git.git("status", "--porcelain=v1", "--untracked-files=normal", cwd=root)
    found = []
    for line in listed.splitlines():
        path = line[3:].rstrip("/") if line.startswith("?? ") else ""
        if path and path.rsplit("/", 1)[-1] in ENV_FOLDERS:
            found.append(f"/{path}")
    if not found:
        return []
    exclude = git.common_dir(root) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    added = [p for p in found if p not in text.splitlines()]
    if added:
        sep = "" if not text or text.endswith("\n") else "\n"
        exclude.write_text(text + sep + "".join(f"{p}\n" for p in added), encoding="utf-8")
    return added
