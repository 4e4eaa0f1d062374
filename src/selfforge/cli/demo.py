"""``selfforge demo``: the main job on a sample project, with no setup and no key.

With a real model configured (or ``--model``) it uses that model; with none it replays a
model session recorded for the demo and bundled with the package, and says so. The Python
demo then runs one measured goal (``run --task … --measure dedupe``): a rename that claims
a speed-up is refused by the measure, a real one lands with its figures.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from rich.markup import escape

from selfforge.errors import UsageError
from selfforge.repo import git
from selfforge.repo.git import _FALLBACK_IDENTITY
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)


LANGS = {
    "python": ("project", "replay.json", "calc.py has a bug (add() subtracts), so test_add fails"),
    "go": ("project_go", "replay_go.json", "calc.go has a bug (Add() subtracts), so TestAdd fails"),
    "rust": (
        "project_rust",
        "replay_rust.json",
        "src/lib.rs has a bug (add() subtracts), so test_add fails",
    ),
    "js": ("project_js", "replay_js.json", "calc.js has a bug (add() subtracts), so 'add' fails"),
}
TOOLCHAINS = {"go": "go", "rust": "cargo", "js": "node"}
# The Python demo's measured goal: its task, the measure that judges it (declared in the
# sample project's selfforge.toml) and the recorded session it replays.
MEASURED_TASK = "Make dedupe() faster"
MEASURE = "dedupe"
MEASURED_REPLAY = "replay_measure.json"


def replay_path(lang: str = "python", name: str | None = None) -> Path:
    """A recorded session bundled for the demo: the language's, or the one named."""
    return Path(str(resources.files("selfforge") / "demo_data" / (name or LANGS[lang][1])))


def make_project(where: Path | None = None, lang: str = "python") -> Path:
    """A fresh git repository holding the sample project, committed: in ``where`` itself
    (made if missing; it must be empty), or a new temporary folder."""
    if where is None:
        root = Path(tempfile.mkdtemp(prefix="selfforge-demo-"))
    else:
        root = where
        root.mkdir(parents=True, exist_ok=True)
        if any(root.iterdir()):
            raise UsageError(f"--dir {root} is not empty; name a new or empty folder")
    _copy(resources.files("selfforge") / "demo_data" / LANGS[lang][0], root)
    _render_directives(root)
    env = {**_FALLBACK_IDENTITY, "PATH": _path()}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "Sample project: a calculator with a bug"],
    ):
        git.git(*args, cwd=root, env=env)
    return root


# What an installer or an earlier run may have added beside the demo's files: pip
# compiles the project's .py files to __pycache__ (bytes no text reader takes), and no
# sample project should start with another's caches.
CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def _copy(source: Any, target: Path) -> None:
    """The sample project byte for byte, caches left out. Contents only, no modes: an
    installed package may be read-only, and the project must not be."""
    for item in source.iterdir():
        if item.name in CACHES or item.name.endswith((".pyc", ".pyo")):
            continue
        if item.is_dir():
            (target / item.name).mkdir(exist_ok=True)
            _copy(item, target / item.name)
        elif item.is_file():
            (target / item.name).write_bytes(item.read_bytes())


def _render_directives(root: Path) -> None:
    """The demo's checks name this interpreter (``{python}`` in its directives)."""
    directives = root / "selfforge.toml"
    text = directives.read_text(encoding="utf-8")
    directives.write_text(text.replace("{python}", _quoted_python()), encoding="utf-8")


def run_demo(
    model: str | None = None,
    *,
    replay: bool = False,
    parent: Path | None = None,
    lang: str = "python",
) -> Path:
    from selfforge.models import choose_default_spec
    from selfforge.run.session import start_run

    if lang not in LANGS:
        raise UsageError(f"--lang {lang!r} is not one of: {', '.join(LANGS)}")
    program = TOOLCHAINS.get(lang)
    if program and shutil.which(program) is None:
        raise UsageError(
            f"the {lang} demo needs `{program}` on PATH; install it, or run the Python demo "
            "(`selfforge demo`)"
        )
    spec = model or (None if replay else choose_default_spec())
    root = make_project(parent, lang)
    console.print("[bold]selfforge demo[/]")
    console.print(
        f"A sample project is at {root}: {LANGS[lang][2]}.\nselfforge will plan a task, "
        "propose edits, check them in an isolated worktree, and land only what passes "
        "every gate."
    )
    replaying = spec is None
    if spec is None:
        spec = f"script:{replay_path(lang)}"
        console.print(
            "[yellow]No model is configured, so this demo replays a model session "
            "recorded for it (bundled with selfforge).[/] Set GEMINI_API_KEY (free "
            "tier) or run Ollama to see a live model."
        )
    else:
        console.print(f"Using the model [bold]{escape(spec)}[/].")
    start_run(root, model=spec)
    refused = None  # the measured goal's first refused candidate (Python demo only)
    if lang == "python":
        refused = run_measured_goal(
            root, f"script:{replay_path(name=MEASURED_REPLAY)}" if replaying else spec
        )
    me = invocation()
    out = console.print
    out(f"\n[bold]What happened[/] is in the journal at {escape(str(root / '.selfforge'))}:")
    out(escape(f"  {me} log --repo {root}"))
    out(escape(f"  {me} show 1 --repo {root}    (the rejected candidate: checks, diff)"))
    out(escape(f"  {me} show 1 --prompts --repo {root}    (and every prompt and response)"))
    if refused is not None:
        out(escape(f"  {me} show {refused} --repo {root}    (the candidate its measure refused)"))
    if lang == "python":
        out(escape(f"  {me} measure HEAD~1..HEAD --repo {root}    (measure the last commit)"))
    out(escape(f"  git -C {root} log --oneline"))
    out("\n[bold]On your own repository[/]:")
    out(escape(f"  cd your-repo && {me} init       # writes selfforge.toml with your checks"))
    out("  export GEMINI_API_KEY=...             # or --model ollama:qwen2.5-coder:7b")
    out(escape(f"  {me} run --cycles 5"))
    if lang == "python":
        out(
            escape(
                f'  {me} run --task "Make X faster" --measure NAME    # NAME: a [[measures]] table'
            )
        )
    return root


def run_measured_goal(root: Path, spec: str) -> int | None:
    """The second run: a goal judged by a measure, not by the reviewers' word. Returns
    the id of its first refused attempt, if any."""
    from selfforge.judge.outcome import Outcome
    from selfforge.run.session import start_run

    console.print(
        f"\n[bold]A measured goal[/]: {MEASURED_TASK!r}, judged by the `{MEASURE}` measure "
        f"(bench/dedupe_bench.py prints dedupe()'s time; see {escape('[[measures]]')} in "
        "selfforge.toml). The base and the candidate are measured in turns until the "
        "change is clear: a candidate lands only if every test gate holds and it measures "
        "improved by at least its min_change (50 %); the reviewers see the figures, they "
        "never stand in for them."
    )
    summary = start_run(root, model=spec, task=MEASURED_TASK, measures=[MEASURE], cycles=2)
    refused = [a["id"] for a in summary["attempts"] if a["outcome"] == Outcome.REJECTED]
    return refused[0] if refused else None


def invocation() -> str:
    """How the user started selfforge, to repeat in hints: `selfforge` when that is what
    the shell finds, else the absolute path of what they typed (`.venv/bin/selfforge` is
    shown as `/…/.venv/bin/selfforge`: a hint that starts with `cd` still finds it), else
    `python -m`."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = Path(argv0).name
    if name == "__main__.py" or not name.startswith("selfforge"):
        return f"{shlex.quote(os.path.abspath(sys.executable))} -m selfforge"
    found = shutil.which(name)
    if found and Path(found).resolve() == Path(argv0).resolve():
        return name
    return shlex.quote(os.path.abspath(argv0))


def _quoted_python() -> str:
    exe = sys.executable
    return exe if " " not in exe else f'"{exe}"'


def _path() -> str:
    import os

    git_dir = shutil.which("git")
    return os.environ.get("PATH", "") or (str(Path(git_dir).parent) if git_dir else "")
