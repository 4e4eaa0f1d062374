"""The main commands: init, run, undo, demo, rollback and clean, defined here; log, show
and status (``history.py``) registered here too, in the order ``--help`` lists them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from selfforge.errors import UsageError
from selfforge.repo import git
from selfforge.repo.workspace import Workspace
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (default: here).")


def register(app: typer.Typer) -> None:
    from selfforge.cli.commands.history import log, show, status

    app.command()(init)
    app.command()(run)
    app.command()(log)
    app.command(context_settings={"ignore_unknown_options": True})(show)  # show -1
    app.command()(status)
    app.command()(undo)
    app.command()(demo)
    app.command()(rollback)
    app.command()(clean)


def init(repo: Path = RepoOpt, force: bool = typer.Option(False, help="Overwrite.")) -> None:
    """Write selfforge.toml with the project's test command (run once here to see that it
    collects), virtualenv and lint tools; keep its environments out of git."""
    from selfforge.cli.initialize import choose_test, exclude_environments
    from selfforge.config import DIRECTIVES_FILE, render_default
    from selfforge.judge.runners import registry
    from selfforge.measure.detect import commented, proposals
    from selfforge.repo.detect import detect_project

    root = git.repo_root(repo)
    target = root / DIRECTIVES_FILE
    if target.exists() and not force:
        raise UsageError(f"{target} exists; edit it, or pass --force to overwrite it")
    # the file is shared: no local paths
    found = detect_project(root, portable=True, languages=registry.init_found)
    excluded = exclude_environments(root)
    trial = choose_test(found, root)
    found.use(trial.chosen or trial.first)  # none ran: the first, written commented out
    goals = ["All tests pass", "No lint errors"] if found.lint else ["All tests pass"]
    modules = registry.init_modules(root, found.test, found.results, found.junit or "")
    text = render_default(
        found.test,
        found.lint,
        goals,
        found.results,
        found.junit,
        commented=trial.none_ran,
        modules=[m.dir for m in modules],
    )
    measures = proposals(root, found.python, found.lint)
    target.write_text(text + commented(measures), encoding="utf-8")
    _say_init(target, found, trial, excluded, modules)
    if measures:
        names = ", ".join(t.split('"')[1] for t in measures)
        console.print(
            f"  measures:   {escape(names)} [dim](commented out in {DIRECTIVES_FILE}: "
            "uncomment to measure; `selfforge doctor` runs each once)[/]"
        )


def _say_modules(modules: list[Any], judged: bool) -> None:
    """The nested modules found: each judged with its own suite when a change touches it
    (or run by the test command itself: a workspace's member); without a test command,
    what each is, judged once [checks] test is set."""
    for i, module in enumerate(modules):
        label = "  modules:    " if i == 0 else "              "
        if module.covered:
            how = module.covered
        elif judged:
            how = f"its own suite: `{module.command}` there, when a change touches it"
        else:
            how = f"a {module.runner} module; judged once [checks] test is set"
        console.print(f"{label}{escape(module.dir)}  [dim]({escape(how)})[/]")


def _say_init(
    target: Path, found: Any, trial: Any, excluded: list[str], modules: list[Any]
) -> None:
    from selfforge.cli.demo import invocation
    from selfforge.config import DIRECTIVES_FILE
    from selfforge.judge.runners import registry

    out = console.print
    out(f"wrote {escape(str(target))}")
    if found.venv:
        out(f"  virtualenv: {escape(f'{found.venv_kind} ({found.venv})')}")
    elif not registry.own_toolchain(found.runner):  # a Go, Rust, JS… project needs none
        out(f"  virtualenv: none; checks use {escape(found.python)}")
    for tried in trial.tried:
        if tried.problem is not None:  # one line each: the command, what it said, the fix
            why = escape(f"{tried.problem}; fix: {tried.fix or 'see selfforge doctor'}")
            out(f"  not used:   {escape(tried.candidate.test)}  [dim]({why})[/]")
    if trial.none_ran:
        me = escape(invocation())
        out(
            "  test:       [yellow]none written[/]: no test command found runs here (the "
            f"first is in the file, commented out); fix the cause above, then `{me} init --force`"
        )
    elif found.test:
        chosen = next((t for t in trial.tried if t.candidate.test == found.test), None)
        ran = chosen.summary if chosen else ""
        how = f"ran here: {ran}" if ran else f"not run: {trial.not_run}"
        why = escape(f"from {found.test_source}; {how}")
        out(f"  test:       {escape(found.test)}  [dim]({why})[/]")
        if chosen and chosen.note:
            out(f"              [yellow]note[/]: {escape(chosen.note)}")
    else:
        out(escape("  test:       (none found: set [checks] test)"))
    if found.lint:
        out(f"  lint:       {escape(found.lint)}  [dim]({escape(found.lint_source)})[/]")
    else:
        out(escape("  lint:       (no lint tool installed for this project: set [checks] lint)"))
    _say_modules(modules, bool(found.test) and not trial.none_ran)
    if excluded:
        out(f"  excluded:   {escape(' '.join(excluded))}  [dim](in .git/info/exclude)[/]")
    me = invocation()
    out("Edit the goals, then commit the file (selfforge lands changes only onto a clean tree):")
    out(escape(f"  git add {DIRECTIVES_FILE} && git commit -m 'selfforge directives'"))
    out(escape(f"  {me} doctor    # runs the checks once and says what to fix"))
    out(escape(f"  {me} run"))


def run(
    repo: Path = RepoOpt,
    goal: list[str] = typer.Option(
        None, "--goal", help="A goal (repeatable); replaces the directives' goals for this run."
    ),
    cycles: int = typer.Option(None, min=1, help="Attempts to make (default: [limits])."),
    max_repairs: int = typer.Option(
        None, "--max-repairs", min=0, help="Repair rounds per attempt (default: [limits])."
    ),
    model: str = typer.Option(None, help="PROVIDER:MODEL[@BASE_URL] or script:PATH."),
    land: str = typer.Option(None, help="merge (fast-forward when safe) or branch."),
    until: str = typer.Option(None, help="Stop starting attempts after this long, e.g. 2h, 30m."),
    task: str = typer.Option(
        None, "--task", help="Attempt this one task (no planner); for scripts and CI."
    ),
    measure: list[str] = typer.Option(
        None,
        "--measure",
        help="A declared measure that judges the --task or --goal (repeatable): it lands "
        "only if improved by the measure's min_change.",
    ),
    no_sandbox: bool = typer.Option(
        False, "--no-sandbox", help="Run checks without the sandbox (unsafe; warns)."
    ),
    parallel: int = typer.Option(
        1,
        "--parallel",
        min=1,
        help="Candidates per cycle: N proposals checked at once; the best passing one lands.",
    ),
    backend: str = typer.Option(
        "pool", "--backend", help="Where --parallel candidates are checked: pool or ray."
    ),
    proposer: str = typer.Option(
        None,
        "--proposer",
        help="oneshot (one call answers with edits) or explore (the model runs commands in "
        "the sandbox, then edits); default: [model] proposer.",
    ),
    agent: str = typer.Option(
        None,
        "--agent",
        help="A coding agent proposes, in the proposer sandbox: mini, aider, claude, codex, "
        'gemini or "cmd:COMMAND {task_file}"; default: [model] agent.',
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No live view and no line per step; the summary only."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="One JSON event per line as the run goes; the summary last."
    ),
) -> None:
    """Run the improvement loop on a repository."""
    from selfforge.run.session import start_run

    start_run(
        repo,
        goals=goal or None,
        cycles=cycles,
        max_repairs=max_repairs,
        model=model,
        land=land,
        until=until,
        quiet=quiet,
        as_json=as_json,
        task=task,
        no_sandbox=no_sandbox,
        parallel=parallel,
        backend=backend,
        proposer=proposer,
        agent=agent,
        measures=measure or None,
    )


def undo(repo: Path = RepoOpt) -> None:
    """Revert the last landed change with a revert commit."""
    from selfforge.run.undo import undo_last

    console.print(undo_last(Workspace(repo)))


def demo(
    model: str = typer.Option(None, help="Use this model instead of the recorded replay."),
    replay: bool = typer.Option(
        False, help="Replay the recorded session even if a model is configured."
    ),
    parent: Path = typer.Option(
        None,
        "--dir",
        help="Make the sample project in this folder (new or empty; default: a new "
        "temporary folder).",
    ),
    lang: str = typer.Option(
        "python", "--lang", help="The sample project's language: python, go, rust or js."
    ),
) -> None:
    """Watch selfforge work on a small sample project; no setup or key needed."""
    from selfforge.cli.demo import run_demo

    run_demo(model=model, replay=replay, parent=parent, lang=lang)


def rollback(repo: Path = RepoOpt) -> None:
    """Restore selfforge's last known good version (a new commit; history is kept)."""
    from selfforge.run.undo import rollback as do_rollback

    console.print(do_rollback(Workspace(repo)))


def clean(
    repo: Path = RepoOpt,
    branches: bool = typer.Option(
        False, "--branches", help="Also remove kept selfforge/… branches that are not merged."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would go."),
) -> None:
    """Remove what runs left: the worktrees kept for the next run, the judge's throwaway
    git dirs, and the kept selfforge/… branches already merged (--branches: every one)."""
    from selfforge.run.clean import clean as do_clean

    done = do_clean(Workspace(repo), branches=branches, dry_run=dry_run)
    for line in done.lines(dry_run):
        console.print(escape(line), highlight=False)


__all__ = ["register"]
