"""``selfforge demo``: the main job on a sample project, with no setup and no key.

With a real model configured (or ``--model``) it uses that model; with none it replays a
model session recorded for the demo and bundled with the package, and says so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from rich.console import Console

from selfforge.git import _FALLBACK_IDENTITY

console = Console(highlight=False, soft_wrap=True)


def replay_path() -> Path:
    return Path(str(resources.files("selfforge") / "demo_data" / "replay.json"))


def make_project(parent: Path | None = None) -> Path:
    """A fresh git repository holding the sample project, committed."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="selfforge-demo-", dir=parent))
    source = resources.files("selfforge") / "demo_data" / "project"
    for item in source.iterdir():
        if item.is_file():
            text = item.read_text(encoding="utf-8")
            (root / item.name).write_text(text.replace("{python}", _quoted_python()))
    env = {**_FALLBACK_IDENTITY, "PATH": _path()}
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "Sample project: a calculator with a bug"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)
    return root


def run_demo(model: str | None = None, *, replay: bool = False, parent: Path | None = None) -> Path:
    from selfforge.models import choose_default_spec
    from selfforge.session import start_run

    spec = model or (None if replay else choose_default_spec())
    root = make_project(parent)
    console.print("[bold]selfforge demo[/]")
    console.print(
        f"A sample project is at {root}: calc.py has a bug (add() subtracts), so "
        "test_add fails.\nselfforge will plan a task, propose edits, check them in an "
        "isolated worktree, and land only what passes every gate."
    )
    if spec is None:
        spec = f"script:{replay_path()}"
        console.print(
            "[yellow]No model is configured, so this demo replays a model session "
            "recorded for it (bundled with selfforge).[/] Set GEMINI_API_KEY (free "
            "tier) or run Ollama to see a live model."
        )
    else:
        console.print(f"Using the model [bold]{spec}[/].")
    start_run(root, model=spec)
    console.print(f"\n[bold]What happened[/] is in the journal at {root / '.selfforge'}:")
    console.print(f"  selfforge log --repo {root}")
    console.print(f"  selfforge show 1 --repo {root}    (the rejected candidate, with its prompts)")
    console.print(f"  git -C {root} log --oneline")
    console.print("\n[bold]On your own repository[/]:")
    console.print("  cd your-repo && selfforge init       # writes selfforge.toml with your checks")
    console.print("  export GEMINI_API_KEY=...             # or --model ollama:qwen2.5-coder:7b")
    console.print("  selfforge run --cycles 5")
    return root


def _quoted_python() -> str:
    exe = sys.executable
    return exe if " " not in exe else f'"{exe}"'


def _path() -> str:
    import os

    git_dir = shutil.which("git")
    return os.environ.get("PATH", "") or (str(Path(git_dir).parent) if git_dir else "")
