"""`selfforge check`: judge a change made anywhere (a commit, range, branch or patch)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from selfforge.errors import SelfforgeError, UsageError
from selfforge.ui.consoles import make_console

if TYPE_CHECKING:
    from selfforge.run.check import CheckResult

console = make_console(highlight=False, soft_wrap=True)
err_console = make_console(stderr=True, highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("check")(check_command)
    app.command("mcp")(mcp_command)


def mcp_command(
    repo: Path = typer.Option(Path("."), "--repo", help="The git repository (default: here)."),
    allow_land: bool = typer.Option(
        False, "--allow-land", help="Let clients land accepted changes (off by default)."
    ),
) -> None:
    """Serve selfforge's judge, one-task runs and journal to MCP clients over stdio."""
    from selfforge.cli.mcp_server import serve
    from selfforge.repo import git

    serve(git.repo_root(repo), allow_land)


def check_command(
    change: str = typer.Argument(
        None,
        help="A commit, A..B range, branch, or - for a patch on stdin (default: HEAD).",
    ),
    repo: Path = typer.Option(Path("."), "--repo", help="The git repository (default: here)."),
    patch: Path = typer.Option(None, "--patch", help="A patch file to judge on top of HEAD."),
    staged: bool = typer.Option(
        False, "--staged", help="The staged change (git's index) on top of HEAD: a pre-commit hook."
    ),
    task: str = typer.Option(None, "--task", help="What the change is for (default: subjects)."),
    land: bool = typer.Option(False, "--land", help="Fast-forward your branch if accepted."),
    review: bool = typer.Option(
        False, "--review", help="Also the critic's and reviewers' say (needs --model)."
    ),
    model: str = typer.Option(None, "--model", help="The model for --review (PROVIDER:MODEL)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole verdict as JSON."),
    no_sandbox: bool = typer.Option(
        False, "--no-sandbox", help="Run checks without the sandbox (with your rights)."
    ),
    changes: list[str] = typer.Option(
        None,
        "--changes",
        help="A test the change means to change (its id, file or name; repeatable): its "
        "base version may fail, and the verdict is 'needs review'. A commit can say the "
        "same with a 'Selfforge-Changes: TEST, ...' trailer.",
    ),
) -> None:
    """Judge an existing change with run's pipeline, sandbox and directives; no model
    needed. The base's tests, in their base version, judge the change's code; the
    change's own tests must pass too. Exit 0 accepted, 1 rejected, 2 could not judge (the
    reason and the fix), 3 needs review (protected paths, dependencies, build
    configuration, a declared behaviour change, a [[measures]] measure made worse: every
    other gate passed)."""
    from selfforge.judge.outcome import Outcome

    try:
        text = _staged_patch(repo, change, patch) if staged else None
        if staged and not text:
            _nothing_staged(as_json)
        result = _check(
            repo, change, patch, task, land, review, model, as_json, no_sandbox, changes or [], text
        )
    except SelfforgeError as exc:
        if as_json:
            print(json.dumps({"verdict": Outcome.ERROR.value, "reason": exc.message}))
        err_console.print(f"[bold red]cannot judge:[/] {escape(exc.message)}")
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        colour = {"good": "green", "bad": "red", "unsure": "yellow"}[result.outcome.tone]
        mark = f"[{colour}]{result.outcome.shown}[/]"
        console.print(f"{mark}: {escape(result.reason.removeprefix('needs review: '))}")
        for item in result.review:
            console.print(f"  - {escape(item)}")
        if result.measured:
            console.print("measures:")
        for line in result.measured:
            console.print(f"  {escape(line)}")
        console.print(
            f"[dim]journaled as attempt {result.attempt_id}: selfforge show {result.attempt_id}[/]"
        )
    _step_summary(result)
    raise typer.Exit(result.exit_code)


def _check(
    repo: Path,
    change: str | None,
    patch: Path | None,
    task: str | None,
    land: bool,
    review: bool,
    model: str | None,
    as_json: bool,
    no_sandbox: bool,
    changes: list[str],
    text: str | None = None,
) -> CheckResult:
    """``text``: a patch already read (--staged); else stdin's (``-``) or --patch's."""
    from selfforge.config import load_directives
    from selfforge.judge.runners import registry
    from selfforge.repo.workspace import Workspace
    from selfforge.run.check import check
    from selfforge.run.session import build_model, choose_reporter, require_a_judge

    if review and not model:
        raise UsageError("--review needs --model SPEC: the critic and reviewers are a model")
    if change == "-":
        text, change = sys.stdin.read(), None
    elif patch is not None:
        if not patch.is_file():
            raise UsageError(f"--patch {patch}: no such file")
        text = patch.read_text(errors="replace")
    ws = Workspace(repo)
    loaded = load_directives(ws.root)
    registry.check_directives(loaded)
    if loaded.path is None:
        raise UsageError(_no_directives_here(ws.root))
    require_a_judge(loaded)
    the_model = build_model(model, loaded) if review and model else None
    reporter = choose_reporter(ws, 1, quiet=as_json, as_json=False)
    return check(
        ws,
        loaded,
        reporter,
        rev=change,
        patch=text,
        task=task,
        land=land,
        model=the_model,
        no_sandbox=no_sandbox,
        changes=changes,
    )


def _no_directives_here(root: Path) -> str:
    """Why a check cannot start without directives, and the fix: a branch that holds
    them when the working tree does not (a detached checkout of an older commit)."""
    from selfforge.config import DIRECTIVES_FILE
    from selfforge.repo import git
    from selfforge.run.session import NO_TESTS_FIX

    here = f"no {DIRECTIVES_FILE} in the working tree ({root})"
    refs = git.git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=root)
    for branch in refs.split():
        if git.ok("cat-file", "-e", f"{branch}:{DIRECTIVES_FILE}", cwd=root):
            return (
                f"{here}, so it names no test command; the branch {branch} has one: check "
                f"from a checkout of it (git checkout {branch}, then selfforge check REV: "
                "any commit can be checked from there), or write one: selfforge init"
            )
    return f"{here}, so it names no test command: {NO_TESTS_FIX}"


def _staged_patch(repo: Path, change: str | None, patch: Path | None) -> str | None:
    """The index's change against HEAD, as ``git diff --cached | selfforge check -`` reads
    it; None when nothing is staged. Under a hook, git names the index being committed
    (``commit -a`` stages into a temporary one): that is the one read."""
    from selfforge.repo import git

    if change is not None or patch is not None:
        raise UsageError("--staged judges the index; give no CHANGE and no --patch with it")
    root = git.repo_root(repo)
    index = os.environ.get("GIT_INDEX_FILE")
    env = {"GIT_INDEX_FILE": str(Path(index).resolve())} if index else None
    return git.diff(root, "--cached", "HEAD", env=env) or None


def _nothing_staged(as_json: bool) -> None:
    """Nothing to judge is no failure: a hook must not stop ``commit --allow-empty``."""
    from selfforge.judge.outcome import Outcome

    reason, accepted = "nothing is staged: nothing to judge", Outcome.ACCEPTED
    if as_json:
        print(
            json.dumps(
                {"verdict": accepted.value, "exit_code": accepted.exit_code, "reason": reason}
            )
        )
    else:
        console.print(f"[green]{accepted.shown}[/]: {reason}")
    raise typer.Exit(accepted.exit_code)


def _step_summary(result: CheckResult) -> None:
    """In GitHub Actions: the verdict as Markdown on the job's summary page."""
    where = os.environ.get("GITHUB_STEP_SUMMARY")
    if not where:
        return
    sign = {"good": "✅", "bad": "❌", "unsure": "👀"}[result.outcome.tone]
    verdict = f"{sign} {result.outcome.shown}"
    lines = [
        f"### selfforge check `{result.change.label}`: {verdict}",
        "",
        f"**Reason:** {result.reason}",
        "",
        *(f"- {item}" for item in result.review),
        *([""] if result.review else []),
        "| step | result |",
        "|---|---|",
        *(f"| {s['name']} | {'pass' if s['passed'] else 'fail'} |" for s in result.steps),
        "",
        f"Changed: {', '.join(sorted(result.changed)) or 'nothing'}",
        *_measures_table(result.measures),
    ]
    with open(where, "a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")


def _measures_table(measures: list[dict[str, object]]) -> list[str]:
    """The measures as a Markdown table: base, candidate, change [interval], runs, verdict."""
    if not measures:
        return []

    def pct(value: object) -> str:
        return f"{value:+.1%}" if isinstance(value, float) else "n/a"

    rows = [
        f"| {m['name']} | {m['base']:.4g} {m['unit']} | {m['candidate']:.4g} {m['unit']} | "
        f"{pct(m['change'])} [{pct(m['low'])}, {pct(m['high'])}] | {m['runs']} | {m['verdict']} |"
        for m in measures
    ]
    head = "| measure | base | candidate | change [interval] | runs | verdict |"
    return ["", head, "|---|---|---|---|---|---|", *rows]
