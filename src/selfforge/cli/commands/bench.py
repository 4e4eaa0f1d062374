"""bench mine, run, report and gate: replay a repository's history through selfforge."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from selfforge.cli.commands.bench_gate import gate_command
from selfforge.errors import UsageError
from selfforge.ui.consoles import make_console

if TYPE_CHECKING:
    from selfforge.bench.records import Instance, Result

console = make_console(highlight=False, soft_wrap=True)
err_console = make_console(stderr=True, highlight=False, soft_wrap=True)

bench_app = typer.Typer(
    help="Replay a repository's history through selfforge: mine instances from its "
    "commits, run them with a model (or the gold changes, to test the judge), report.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=err_console,
    )


@bench_app.command("mine")
def mine_command(
    repo: Path = typer.Option(Path("."), "--repo", help="The git repository to mine."),
    out: Path = typer.Option(
        Path("bench-instances.jsonl"), "--out", help="Instances file (JSONL; .gz to compress)."
    ),
    since: str = typer.Option(None, help="Only commits after this date, e.g. 2024-01-01."),
    limit: int = typer.Option(None, min=1, help="Stop after this many instances."),
    workers: int = typer.Option(1, min=1, help="Commits replayed at once."),
    test_cmd: str = typer.Option(
        None,
        "--test-cmd",
        help="pytest command for the repository (default: python -m pytest, with "
        "PYTHONPATH=src for a src layout; `python` is this interpreter).",
    ),
    timeout: float = typer.Option(300, min=1, help="Seconds per test run."),
    mutations: int = typer.Option(
        8, min=0, help="Mutations tried per instance to make a negative (0: none)."
    ),
    scope: str = typer.Option(
        "module",
        help="What the instance's tests are: module (the changed test files) or class "
        "(only their test classes that hold a FAIL_TO_PASS test: faster replays).",
    ),
    setup: str = typer.Option(
        None,
        "--setup",
        help="What installs the dependencies, once per set of manifests, with the network "
        "(default: npm ci --ignore-scripts, or npm install without a lockfile, for a Node "
        'project with dependencies; "" for none). Recorded in each instance as its '
        "[checks] setup.",
    ),
    stop_after: int = typer.Option(
        20,
        "--stop-after",
        min=0,
        help="Stop when this many first commits all fail the same way (their tests do not "
        "collect, time out, ...), saying why and what to do (0: never).",
    ),
    impossible: bool = typer.Option(
        False,
        "--impossible",
        help="Also write each instance's impossible variant (its target test made to "
        "contradict itself; kept only when the gold change fails it).",
    ),
    kind: str = typer.Option(
        "tests",
        "--kind",
        help="tests (commits whose changed tests fail on the parent) or perf (commits a "
        "declared [[measures]] calls improved from the parent: --limit commits looked at).",
    ),
    measures: list[str] = typer.Option(
        None, "--measure", help="perf: only this measure (repeatable; default: every one)."
    ),
    words: str = typer.Option(
        None,
        "--words",
        help="perf: only commits whose subject holds one of these words, comma-separated "
        '("speed" for fast,speed,perf,optimi,quick,slow,cache,latency).',
    ),
    min_change: float = typer.Option(
        None,
        "--min-change",
        min=0.001,
        help="perf: the relative gain to keep (default: each measure's own min_change).",
    ),
) -> None:
    """Find commits whose changed tests fail on the parent's code and pass on their own;
    say, per reason, how many commits made no instance and the commonest error of each.
    With --kind perf: commits that a declared measure calls improved from their parent."""
    if kind == "perf":
        _mine_perf(repo, out, limit, measures or [], words, min_change)
        return
    if kind != "tests":
        raise UsageError(f"--kind {kind!r}: use tests or perf")
    from selfforge.bench.mine import mine
    from selfforge.bench.mine_report import Skips
    from selfforge.bench.records import write_instances

    if scope not in ("module", "class"):
        raise UsageError(f"--scope {scope!r}: use module or class")
    skips = Skips()
    with _progress() as bar:
        task = bar.add_task("mining commits", total=None, status="")

        def show(done: int, total: int, found: int) -> None:
            bar.update(task, completed=done, total=total, status=f"{found} instance(s)")

        instances = mine(
            repo,
            since=since,
            limit=limit,
            workers=workers,
            test_cmd=test_cmd,
            timeout_s=timeout,
            mutations=mutations,
            scope=scope,
            setup=setup,
            on_progress=show,
            skips=skips,
            stop_after=stop_after,
        )
    if impossible:
        instances = _with_impossible(instances, timeout)
    write_instances(out, instances)
    if skips.total:
        console.print(f"{skips.total} commit(s) made no instance:")
        for line in skips.lines():
            console.print(f"  {escape(line)}", highlight=False)
    negatives = sum(1 for i in instances if i.negative_patch)
    variants = sum(i.impossible for i in instances)
    console.print(
        f"wrote {len(instances)} instance(s) to {out} ({negatives} with a negative"
        + (f", {variants} impossible" if impossible else "")
        + "); "
        f"replay them with: selfforge bench run --instances {out} --gold --negatives"
        + (" (the impossible ones: with --model SPEC)" if impossible else "")
    )


def _mine_perf(
    repo: Path,
    out: Path,
    limit: int | None,
    measures: list[str],
    words: str | None,
    min_change: float | None,
) -> None:
    from selfforge.bench.perf import SPEED_WORDS, mine_perf, write_perf

    chosen = None
    if words:
        chosen = (
            list(SPEED_WORDS)
            if words.strip() == "speed"
            else [w.strip() for w in words.split(",") if w.strip()]
        )

    def show(commit: str, what: str) -> None:
        err_console.print(f"[dim]{commit[:10]}: {escape(what[:160])}[/]")

    instances, skipped = mine_perf(
        repo, measures, limit=limit, words=chosen, min_change=min_change, on_commit=show
    )
    write_perf(out, instances)
    if skipped:
        console.print(f"{len(skipped)} commit(s) made no instance:")
        for line in skipped:
            console.print(f"  {escape(line)}", highlight=False)
    for inst in instances:
        figures = "; ".join(
            f"{f['name']}: {f['change']:+.1%} in {f['runs']} runs"
            for f in inst.figures
            if f["name"] in inst.measures and f.get("change") is not None
        )
        console.print(f"instance {escape(inst.instance_id)}: {escape(figures)}")
    console.print(
        f"wrote {len(instances)} perf instance(s) to {out}; replay them with: "
        f"selfforge bench run --instances {out} --gold --negatives --noop-trials 20"
    )


def _run_perf(
    instances: Path,
    *,
    gold: bool,
    negatives: bool,
    noop_trials: int,
    timeout: float,
    work_dir: Path | None,
    keep: bool,
    results: Path | None,
    report: Path | None,
    only: list[str],
    limit: int | None,
    model: str = "",
) -> None:
    """Perf instances replayed: gold, negatives, no-op trials, a model's own attempt
    (bench/perf_replay.py, perf_model.py)."""
    from selfforge.bench.perf import read_perf
    from selfforge.bench.perf_replay import append_result, replay_all, summary, write_report

    if not (gold or negatives or noop_trials or model):
        raise UsageError(
            "nothing to run: pass --gold, --negatives, --noop-trials N or --model SPEC"
        )
    loaded = read_perf(instances)
    if only:
        unknown = sorted(set(only) - {i.instance_id for i in loaded})
        if unknown:
            raise UsageError(f"--only {unknown[0]}: no such instance in {instances}")
        loaded = [i for i in loaded if i.instance_id in set(only)]
    loaded = loaded[:limit] if limit else loaded
    results = results or instances.with_name(_stem(instances) + "-results.jsonl")
    report = report or results.with_name(_stem(results) + "-report")
    results.unlink(missing_ok=True)

    def done(result) -> None:  # type: ignore[no-untyped-def]
        append_result(results, result)
        err_console.print(f"[dim]{escape(result.instance_id)}: {result.wall_s:.1f} s[/]")

    found = replay_all(
        loaded,
        gold=gold,
        negatives=negatives,
        noop_trials=noop_trials,
        timeout_s=timeout,
        work_dir=work_dir,
        keep=keep,
        on_done=done,
        model=model,
    )
    path = write_report(found, report, str(instances))
    for line in summary(found):
        console.print(escape(line), highlight=False)
    console.print(f"results: {results}\nreport:  {path}")
    if any(r.error for r in found):
        first = next(r for r in found if r.error)
        err_console.print(
            f"[bold red]error:[/] {escape(first.instance_id)}: {escape(str(first.error)[:300])}"
        )
        raise typer.Exit(1)


def _with_impossible(instances: list[Instance], timeout_s: float) -> list[Instance]:
    """The instances, each followed by its impossible variant where one is drawn; says
    why the others have none."""
    from selfforge.bench.impossible import variants

    def show(inst: Instance, why: str | None) -> None:
        if why is not None:
            err_console.print(f"{escape(inst.instance_id)}: no impossible variant: {escape(why)}")

    with tempfile.TemporaryDirectory(prefix="selfforge-impossible-") as work:
        found = {v.instance_id: v for v in variants(instances, Path(work), timeout_s, show)}
    out = []
    for inst in instances:
        out.append(inst)
        if variant := found.get(inst.instance_id + "-impossible"):
            out.append(variant)
    return out


def _proposers(text: str) -> tuple[str, ...]:
    """The proposers of ``--proposer``, each a name of propose/registry.py."""
    from selfforge.propose import registry

    # A comma starts the next proposer only before one's name: `agent:cmd:…` is a shell
    # command, which may hold commas of its own.
    names = [
        re.escape(e.name) + (":" if e.argument else r"\s*(?:,|$)")
        for e in registry.PROPOSERS.values()
    ]
    after = re.compile(rf",(?=\s*(?:{'|'.join(names)}))")
    chosen = tuple(p.strip() for p in after.split(text) if p.strip())
    if not chosen or any(registry.parse(p) is None for p in chosen):
        raise UsageError(f"--proposer {text!r}: use {registry.spellings()}, comma-separated")
    return chosen


@bench_app.command("run")
def run_command(
    instances: Path = typer.Option(..., "--instances", help="Instances file from `bench mine`."),
    repo: str = typer.Option(
        None, "--repo", help="Clone from here instead of each instance's recorded repo."
    ),
    model: str = typer.Option(None, help="PROVIDER:MODEL[@BASE_URL] or script:PATH."),
    gold: bool = typer.Option(False, "--gold", help="Propose each commit's own change."),
    negatives: bool = typer.Option(
        False,
        "--negatives",
        help="Propose wrong changes of every kind, each a row: bug, incomplete, skip-target, "
        "delete-target, weaken-target, infra, order.",
    ),
    kinds: str = typer.Option(
        None, "--kinds", help="Only these kinds of negative, comma-separated (e.g. bug,infra)."
    ),
    workers: int = typer.Option(max(1, (os.cpu_count() or 2) // 2), min=1, help="Jobs at once."),
    budget_usd: float = typer.Option(
        None, "--budget-usd", min=0, help="Start no new job once the results cost this much."
    ),
    results: Path = typer.Option(
        None, "--results", help="Results JSONL (default: beside the instances); resumes."
    ),
    report: Path = typer.Option(None, "--report", help="Report folder (default: beside results)."),
    backend: str = typer.Option("pool", help="pool (local processes) or ray."),
    ray_address: str = typer.Option(
        None, "--ray-address", help="A running Ray cluster (auto, ray://HOST:10001)."
    ),
    max_repairs: int = typer.Option(None, "--max-repairs", min=0, help="Repairs per attempt."),
    only: list[str] = typer.Option(None, "--only", help="Run just this instance id (repeatable)."),
    limit: int = typer.Option(None, min=1, help="Run the first N instances."),
    work_dir: Path = typer.Option(None, "--work-dir", help="Where clones go (default: temp)."),
    keep: bool = typer.Option(False, "--keep", help="Keep each job's clone for inspection."),
    timeout: float = typer.Option(900, min=1, help="Seconds per test run in a job."),
    repeat: int = typer.Option(
        1,
        "--repeat",
        min=1,
        help="Run every job this many times; the report says how often the verdicts agree.",
    ),
    proposer: str = typer.Option(
        "oneshot",
        "--proposer",
        help="Who proposes in model jobs, as `run` takes it: oneshot, explore or "
        "agent:NAME; comma-separated for a column each (e.g. oneshot,explore).",
    ),
    impossible: bool = typer.Option(
        False,
        "--impossible",
        help="Add each instance's impossible variant (as `bench mine --impossible` "
        "writes them) to the model jobs: an honest model says it cannot be done.",
    ),
    noop_trials: int = typer.Option(
        0,
        "--noop-trials",
        min=0,
        help="Perf instances: compare a no-op reformat with the parent this many times "
        "(`measure A..B`); each improved one is a false improvement.",
    ),
) -> None:
    """Replay instances through selfforge, each in a fresh clone; write results and a report.
    Perf instances (`bench mine --kind perf`): the gold commit must measure improved; its
    speed-up reverted (tests kept), a no-op reformat and the commit with a planted bug must
    each be refused."""
    from selfforge.bench.perf import is_perf_file

    if is_perf_file(instances):
        _run_perf(
            instances,
            gold=gold,
            negatives=negatives,
            noop_trials=noop_trials,
            timeout=timeout,
            work_dir=work_dir,
            keep=keep,
            results=results,
            report=report,
            only=only or [],
            limit=limit,
            model=model or "",
        )
        return
    from selfforge.bench.executors import make_executor
    from selfforge.bench.records import NEGATIVE_KINDS, Mode, read_instances
    from selfforge.bench.report import honesty, write_report
    from selfforge.bench.run import make_jobs, run_bench

    modes: list[Mode] = []
    if model:
        modes.append("model")
    if gold:
        modes.append("gold")
    if negatives:
        modes.append("negative")
    if not modes:
        raise UsageError(
            "nothing to run: pass --model SPEC, or --gold / --negatives to test the judge"
        )
    chosen = tuple(k.strip() for k in (kinds or ",".join(NEGATIVE_KINDS)).split(",") if k.strip())
    unknown_kinds = [k for k in chosen if k not in NEGATIVE_KINDS]
    if unknown_kinds or not chosen:
        raise UsageError(
            f"--kinds {kinds!r}: use some of {', '.join(NEGATIVE_KINDS)}, comma-separated"
        )
    loaded = read_instances(instances)
    if repo:
        local = Path(repo)
        source = str(local.absolute()) if local.exists() else repo
        loaded = [i.model_copy(update={"repo": source}) for i in loaded]
    if only:
        unknown = sorted(set(only) - {i.instance_id for i in loaded})
        if unknown:
            raise UsageError(f"--only {unknown[0]}: no such instance in {instances}")
        loaded = [i for i in loaded if i.instance_id in set(only)]
    loaded = loaded[:limit] if limit else loaded
    proposers = _proposers(proposer)
    if impossible:
        if not model:
            raise UsageError("--impossible makes model jobs only: pass --model SPEC")
        loaded = _with_impossible(loaded, timeout)
    results = results or instances.with_name(_stem(instances) + "-results.jsonl")
    report = report or results.with_name(_stem(results) + "-report")
    scratch = work_dir or Path(tempfile.gettempdir()) / "selfforge-bench"
    jobs = make_jobs(
        loaded,
        modes,
        model or "",
        scratch.absolute(),
        max_repairs=max_repairs,
        keep_clone=keep,
        timeout_s=timeout,
        kinds=chosen,
        repeat=repeat,
        proposers=proposers,
    )
    executor = make_executor(backend, workers, ray_address)
    with _progress() as bar:
        task = bar.add_task("bench", total=len(jobs), status="")

        def show(p) -> None:  # type: ignore[no-untyped-def]
            status = f"solved {p.solved}"
            if "negative" in modes:
                status += f", negatives rejected {p.rejected} (not drawn {p.not_drawn})"
            status += f", errors {p.errors}, ${p.spent_usd:.4f}"
            bar.update(task, completed=p.done, status=status)

        try:
            outcome = run_bench(
                jobs, results, executor, workers=workers, budget_usd=budget_usd, on_progress=show
            )
        except KeyboardInterrupt:
            bar.stop()
            err_console.print(
                f"[yellow]interrupted[/]: finished jobs are kept in {escape(str(results))}; "
                "run the same command again to continue"
            )
            raise SystemExit(130) from None
    path = write_report(outcome.results, report, str(results))
    console.print(
        f"{outcome.new} job(s) run now, {len(outcome.results)} in all: {outcome.stop_reason}"
    )
    for line in honesty(outcome.results):
        console.print(escape(line), highlight=False)
    _say_scores(outcome.results)
    console.print(f"results: {results}\nreport:  {path}")
    errors = [r for r in outcome.results if r.error is not None]
    if errors:
        first = errors[0]
        err_console.print(
            f"[bold red]error:[/] {len(errors)} job(s) ended in errors, not verdicts (first: "
            f"{escape(first.instance_id)} {first.mode}: {escape(str(first.error)[:200])}); "
            f"see {escape(str(results))}"
        )
        raise typer.Exit(1)


@bench_app.command("report")
def report_command(
    results: Path = typer.Argument(..., help="Results JSONL from `bench run`."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: beside the results)."),
) -> None:
    """Write the Markdown report and plots for a results file."""
    from selfforge.bench.records import read_results
    from selfforge.bench.report import honesty, write_report

    if not results.is_file():
        raise UsageError(f"no results file {results}; write one with `selfforge bench run`")
    rows = read_results(results)
    path = write_report(rows, out or results.with_name(_stem(results) + "-report"), str(results))
    for line in honesty(rows):
        console.print(escape(line), highlight=False)
    _say_scores(rows)
    console.print(f"report: {path}")


bench_app.command("gate")(gate_command)


def _say_scores(rows: list[Result]) -> None:
    """The proposers' table (when the results hold one), and in red each change that
    landed on an impossible instance."""
    from selfforge.bench.report import gate_failures, proposers_section

    table = [line for line in proposers_section(rows) if line.startswith("|")]
    for line in table:
        console.print(escape(line), highlight=False)
    for r in gate_failures(rows):
        err_console.print(
            f"[bold red]gate failure:[/] a change landed on the impossible instance "
            f"{escape(r.instance_id)} ({escape(r.model)}, {escape(r.proposer)})"
        )


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


__all__ = ["register"]
