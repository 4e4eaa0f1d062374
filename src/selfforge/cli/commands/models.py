"""``selfforge models`` (what a provider offers) and ``selfforge doctor`` (what to fix)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from selfforge.cli.doctor import UNCOMMITTED_DIRECTIVES, Finding
from selfforge.errors import SelfforgeError, UsageError
from selfforge.ui.consoles import make_console

console = make_console(highlight=False, soft_wrap=True)
RepoOpt = typer.Option(Path("."), "--repo", help="The git repository (default: here).")
ModelOpt = typer.Option(None, "--model", help="PROVIDER:MODEL[@BASE_URL] (default: configured).")
# Listing models is cheap and free on every provider; do not let it hang doctor.
PROBE_TIMEOUT_S = 15.0


def register(app: typer.Typer) -> None:
    app.command()(models)
    app.command()(doctor)


ProbeOpt = typer.Option(
    False,
    "--probe",
    help="Call the model once: reachable, context window, max output, latency, tokens/s.",
)


def models(model: str = ModelOpt, repo: Path = RepoOpt, probe: bool = ProbeOpt) -> None:
    """List the models the configured (or given) provider offers, or probe the model."""
    from selfforge.models import from_spec, parse_spec

    spec = _spec_for(model, repo)
    if parse_spec(spec).provider == "script":
        raise UsageError("a script:PATH model replays a file; there is nothing to list")
    if probe:
        result = _probe(spec, repo)
        for line in result.lines():
            console.print(escape(line))
        if not result.reachable:
            raise typer.Exit(1)
        return
    client = from_spec(spec, timeout_s=PROBE_TIMEOUT_S, max_retries=1)
    names = client.list_models()  # type: ignore[attr-defined]
    chosen = parse_spec(spec).model
    console.print(f"{len(names)} model(s) from {spec.partition(':')[0]}:")
    for name in sorted(names):
        console.print(f"  {escape(name)}{'  <- configured' if name == chosen else ''}")


def doctor(repo: Path = RepoOpt, model: str = ModelOpt) -> None:
    """A checklist: git, directives, virtualenv, the test and lint commands run once, the
    model, the sandbox; a fix for each failure."""
    findings = diagnose(repo, model)
    marks = {"ok": "[green]ok  [/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}
    for f in findings:
        detail = f": {f.detail}" if f.detail else ""
        console.print(f"{marks[f.status]} {escape(f.what + detail)}")
        if f.fix and f.status != "ok":
            console.print(f"       [bold]fix:[/] {escape(f.fix)}")
    failed = sum(f.status == "fail" for f in findings)
    if failed:
        console.print(f"{failed} problem(s) to fix before `selfforge check` or `run`.")
        raise typer.Exit(1)
    if any(f.what == UNCOMMITTED_DIRECTIVES for f in findings):
        console.print("ready for check (`selfforge run` lands once the directives are committed).")
    elif any(f.what == NO_MODEL for f in findings):
        console.print("ready for check (`selfforge run` also needs a model; see above).")
    else:
        console.print("ready for run.")


def diagnose(repo: Path, model: str | None) -> list[Finding]:
    from selfforge.cli.doctor import (
        check_home,
        check_measures,
        check_repo_state,
        check_resident,
        check_sandbox,
        check_toolchain,
        check_venv,
    )
    from selfforge.repo import git

    findings = [_check_git(repo)]
    if findings[0].status == "fail":
        return findings
    root = git.repo_root(repo)
    findings += check_repo_state(root)
    findings.append(check_venv(root))
    directives, found = _check_directives(root)
    findings += found
    findings += _check_model(model, root)
    findings += _check_keys_file()
    findings.append(check_sandbox(directives))
    if (toolchain := check_toolchain(root, directives)) is not None:
        findings.append(toolchain)
    if (home := check_home(root, directives)) is not None:
        findings.append(home)
    findings += check_measures(root, directives)
    findings.append(check_resident())
    return findings


def _check_git(repo: Path) -> Finding:
    from selfforge.repo import git

    if shutil.which("git") is None:
        return Finding("fail", "git", "not found on PATH; install git")
    try:
        return Finding("ok", "git", str(git.repo_root(repo)))
    except SelfforgeError:
        return Finding("fail", "git", f"{repo} is not a git repository; run `git init` there")


def _check_directives(root: Path) -> tuple[Any, list[Finding]]:
    """The directives (None when unreadable) and what is wrong with them; the test and
    lint commands are run once each, as the loop would."""
    from selfforge.cli.doctor import check_lint, check_tests
    from selfforge.config import load_directives
    from selfforge.judge.runners import registry
    from selfforge.models.secrets import mask
    from selfforge.repo.detect import detect_project

    try:
        loaded = load_directives(root)
        registry.check_directives(loaded)
    except SelfforgeError as exc:
        return None, [Finding("fail", "directives", exc.message, "fix the line it names")]
    checks = loaded.directives.checks
    if loaded.path is None:
        found = [
            Finding(
                "warn",
                "directives",
                "no selfforge.toml; a run uses what `selfforge init` would write",
                "run `selfforge init`",
            )
        ]
        project = detect_project(root, languages=registry.init_found)
        checks.test, checks.lint = project.test, project.lint
        checks.runner, checks.junit = project.results, project.junit  # type: ignore[assignment]
    else:
        found = [Finding("ok", "directives", str(loaded.path))]
    if mask(loaded.text) != loaded.text:
        found.append(
            Finding(
                "fail",
                "secrets",
                f"{loaded.path.name} holds an API key; remove it and set it in the "
                "environment or the user keys file instead",
            )
        )
    if checks.tests == "none":
        found.append(
            Finding(
                "warn",
                "test check",
                '[checks] tests = "none": no test judges a change; each is kept on a branch',
                "set [checks] test to your test command to let changes land",
            )
        )
    elif checks.test:
        found += check_tests(checks.test, root, checks.timeout_s, loaded.directives)
    else:
        found.append(
            Finding(
                "fail",
                "test check",
                "no test command: nothing can tell a regression, so `selfforge run` refuses",
                'set [checks] test in selfforge.toml, or opt out with [checks] tests = "none"',
            )
        )
    if checks.lint:
        found.append(check_lint(checks.lint, root, checks.timeout_s, loaded.directives))
    return loaded.directives, found


NO_MODEL = "model (for run)"


def _check_model(model: str | None, root: Path) -> list[Finding]:
    from selfforge.models import from_spec, parse_spec
    from selfforge.models.base import ModelError

    try:
        spec = _spec_for(model, root)
    except SelfforgeError as exc:
        if model:  # asked for, and unusable
            return [Finding("fail", "model", exc.message)]
        # `check` and the MCP server judge changes made elsewhere: no model needed
        return [Finding("warn", NO_MODEL, "none configured; `check` needs none", exc.message)]
    parsed = parse_spec(spec)
    if parsed.provider == "script":
        try:
            from_spec(spec)  # reads and checks the script file
        except SelfforgeError as exc:
            return [Finding("fail", "model", exc.message)]
        return [Finding("ok", "model", f"{spec} (scripted, no network)")]
    try:
        client = from_spec(spec, timeout_s=PROBE_TIMEOUT_S, max_retries=0, requests_per_minute=0)
        names = client.list_models()  # type: ignore[attr-defined]
    except ModelError as exc:
        return [Finding("fail", "model", exc.message)]
    except SelfforgeError as exc:  # a missing key, an unknown provider
        return [Finding("fail", "model", exc.message)]
    found = [Finding("ok", "model", f"{spec}: connected, key accepted")]
    found.append(_check_model_speed(spec, root))
    if names and parsed.model not in names and f"models/{parsed.model}" not in names:
        hint = "run `ollama pull " + parsed.model + "`" if parsed.provider == "ollama" else ""
        sample = ", ".join(sorted(names)[:8])
        found.append(
            Finding(
                "fail" if parsed.provider == "ollama" else "warn",
                "model name",
                f"{parsed.model!r} is not in the server's list ({sample}…) {hint}".strip(),
            )
        )
    return found


def _probe(spec: str, repo: Path) -> Any:
    """One timed call with the run's generation settings (from the directives, if any)."""
    from selfforge.config import load_directives
    from selfforge.models import from_spec
    from selfforge.models.probe import probe
    from selfforge.run.session import generation_settings

    try:
        generation = generation_settings(load_directives(repo.resolve()))
    except SelfforgeError:
        generation = None
    model = from_spec(spec, max_retries=0, requests_per_minute=0, generation=generation)
    return probe(model)  # type: ignore[arg-type]


def _check_model_speed(spec: str, root: Path) -> Finding:
    result = _probe(spec, root)
    if not result.reachable:
        return Finding("fail", "model call", result.error)
    speed = f", {result.tokens_per_s:.0f} tokens/s" if result.tokens_per_s else ""
    detail = (
        f"context {result.window} tokens (from {result.window_from}), max output "
        f"{result.max_output}; one call {result.latency_s:.2f} s{speed}"
    )
    if result.window and result.window < 8192:
        return Finding(
            "warn",
            "model window",
            detail + "; too small for most source files",
            "raise the server's context (llama.cpp -c 8192, vLLM --max-model-len 8192)",
        )
    return Finding("ok", "model window", detail)


def _check_keys_file() -> list[Finding]:
    from selfforge.models.secrets import keys_file

    path = keys_file()
    if os.name != "posix" or not path.exists():
        return []
    if path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
        return [Finding("warn", "keys file", f"{path} is readable by others; chmod 600 {path}")]
    return [Finding("ok", "keys file", str(path))]


def _spec_for(model: str | None, repo: Path) -> str:
    """--model, else the directives' [model] spec, else the first configured provider."""
    from selfforge.config import load_directives
    from selfforge.models import choose_default_spec, no_model_message

    if model:
        return model
    try:
        configured = load_directives(repo.resolve()).directives.model.spec
    except SelfforgeError:
        configured = None
    spec = configured or choose_default_spec()
    if spec is None:
        raise UsageError(no_model_message())
    return spec
