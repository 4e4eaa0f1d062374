"""What a run shares, built once: the ``Engine`` every attempt (and ``selfforge check``)
works with, and the check space in it (the sandbox from ``[sandbox]``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from selfforge.config import Directives, LoadedDirectives
from selfforge.judge.runners import registry
from selfforge.judge.sandbox import bwrap as sandbox
from selfforge.judge.sandbox.command import CheckSpace, anchor_command
from selfforge.judge.sandbox.limits import Limits
from selfforge.judge.sandbox.policy import policy_ahead
from selfforge.repo import git
from selfforge.repo.testpaths import TestRule, rule_for
from selfforge.repo.workspace import Workspace

if TYPE_CHECKING:  # the names of a run's parts; check_space alone (measure) needs none
    from selfforge.context import ContextBundle
    from selfforge.journal.store import Journal
    from selfforge.models import Model
    from selfforge.roles.caller import Caller
    from selfforge.ui.reporters import Reporter


@dataclass
class Engine:
    """What every attempt of a run shares."""

    ws: Workspace
    journal: Journal
    caller: Caller
    loaded: LoadedDirectives
    reporter: Reporter
    run_id: int
    edit_format: str
    context_window: int
    space: CheckSpace
    rule: TestRule
    lessons_for: Callable[[str], list[str]] = lambda task: []
    self_target: bool = False  # the repository is selfforge's own source
    # A first attempt's context, built while the baseline ran: (what it was built for, it).
    ready_context: tuple[tuple[object, ...], ContextBundle] | None = None

    @property
    def d(self) -> Directives:
        return self.loaded.directives


def check_space(d: Directives, repo: Path, no_sandbox: bool = False) -> CheckSpace:
    """How this repository's checks run: the sandbox from [sandbox], unless opted out."""
    sb = d.sandbox
    mode = "off" if no_sandbox else sb.mode
    if mode != "off":
        sandbox.require()  # no silent downgrade: refuse rather than run unconfined
    runner, junit, test = registry.check_name(d.checks.runner), d.checks.junit or "", d.checks.test
    return CheckSpace(
        repo=repo,
        git_common_dir=git.common_dir(repo),  # cached: one git call per repository
        mode=mode,
        network=sb.network,
        limits=Limits(memory_mb=sb.memory_mb, processes=sb.processes),
        output_kb=sb.output_kb,
        tmp_mb=sb.tmp_mb,
        disk_mb=sb.disk_mb,
        env_names=tuple(dict.fromkeys([*d.checks.env, *sb.env])),
        readable=tuple(Path(p).expanduser() for p in sb.readable),
        hidden=tuple(Path(p).expanduser() for p in sb.hidden),
        runner=runner,
        junit=junit,
        adapter=registry.detect(test, repo, runner, junit) if test else None,
    )


ALLOW_TEST_EDITS_WARNING = (
    "warning: [safety] allow_test_edits no longer loosens anything: the base's tests, in "
    "their base version, judge every change's code, and a change may add tests anywhere; "
    "remove the key"
)


def make_engine(
    ws: Workspace,
    loaded: LoadedDirectives,
    journal: Journal,
    model: Model,
    reporter: Reporter,
    run_id: int,
    edit_format: str = "search_replace",
    context_window: int = 32_000,
    no_sandbox: bool = False,
) -> Engine:
    """What every attempt of a run (or a `check`) shares; the check commands anchored to
    the user's checkout."""
    d = loaded.directives
    if d.safety.allow_test_edits:
        sys.stderr.write(ALLOW_TEST_EDITS_WARNING + "\n")
    for kind in ("test", "lint"):
        command = getattr(d.checks, kind)
        if command:
            setattr(d.checks, kind, anchor_command(command, ws.root))
    from selfforge.models.budget import Budget
    from selfforge.roles.caller import Caller

    caller = Caller(model, journal, Budget(d.limits.budget_usd, d.limits.budget_tokens), run_id)
    engine = Engine(
        ws,
        journal,
        caller,
        loaded,
        reporter,
        run_id,
        edit_format,
        context_window,
        space=check_space(d, ws.root, no_sandbox),
        rule=rule_for(ws.root),
    )
    policy_ahead(engine.space, d.checks.test)  # while the baseline's worktree is made
    return engine
