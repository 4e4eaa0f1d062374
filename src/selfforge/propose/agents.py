"""Coding agents as proposers (``run --agent NAME``): one small adapter per agent.

An adapter says how to start the agent on a task without a person (its command line),
how to point it at a model (the variables and options for the endpoint and key), which
of the user's home folders hold its own configuration (shown in the proposer sandbox,
read-only, or as a copy it may write and that is thrown away), where its own trajectory
file is, and how to read its steps and cost from that file or its output. Running it is
``external.py``'s job; the model it is pointed at, ``agent_models.py``'s.
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from selfforge.errors import UsageError
from selfforge.propose import agent_records as records
from selfforge.propose.agent_models import LITELLM_NAMES, LITELLM_OFFLINE, Endpoint, key_env
from selfforge.propose.agent_program import command_files


@dataclass(frozen=True)
class Job:
    """One run of an agent: the task file and the folder for its files (outside the
    worktree, shown to it read-write), and the model it is pointed at."""

    task_file: Path
    io: Path
    endpoint: Endpoint | None


@dataclass(frozen=True)
class Adapter:
    name: str
    program: str  # looked up on PATH
    install: str  # how to get it, for the message when it is missing
    argv: Callable[[str, Job], str]  # (the program's path, the job) -> a shell command
    env: Callable[[Job], dict[str, str]] = lambda job: {}
    # Home-relative paths of its configuration: shown read-only at the same place under
    # the sandbox's home, or copied there (for what the agent writes as it starts).
    config: tuple[str, ...] = ()
    copied: tuple[str, ...] = ()
    trajectory: str | None = None  # its own trajectory file, in the job's folder
    # Key variables of the user's environment it gets when no model of ours is given.
    keys: tuple[str, ...] = ()
    steps: Callable[[str], list[records.AgentStep]] = lambda text: []
    spend: Callable[[str, str], records.Spend] = lambda output, trajectory: records.Spend()
    shown: Callable[[Path], tuple[Path, ...]] = lambda exe: ()  # its installation
    # Files its command names that the sandbox would hide, from the user's checkout:
    # shown read-only (a ``cmd:`` agent's program beside the repository), or refused.
    files: Callable[[Path], tuple[Path, ...]] = lambda root: ()

    def ready(self, root: Path) -> tuple[Path, ...]:
        """Before a run: the program found (a UsageError saying how to install it, else),
        and the files of ``files`` (a UsageError with the reason and the fix)."""
        self.locate()
        return self.files(root)

    def locate(self) -> str:
        """The program's path ("" for a ``cmd:`` agent: its shell finds it)."""
        if not self.program:
            return ""
        found = shutil.which(self.program)
        if found is None:
            raise UsageError(
                f"--agent {self.name}: `{self.program}` is not on PATH; install it "
                f"({self.install}) or pick another agent"
            )
        return found


def _q(value: object) -> str:
    return shlex.quote(str(value))


def _task_text(job: Job) -> str:
    return f'"$(cat {_q(job.task_file)})"'


def _node_package(exe: Path) -> tuple[Path, ...]:
    """An npm-installed agent: the node_modules its launcher is in (a native binary of
    the agent is a package beside it)."""
    real = exe.resolve()
    modules = next((p for p in real.parents if p.name == "node_modules"), None)
    return (modules,) if modules is not None else (real.parent,)


# --- mini-swe-agent ----------------------------------------------------------------------


def _mini_argv(exe: str, job: Job) -> str:
    model = f" -m {_q(job.endpoint.litellm_name)}" if job.endpoint else ""
    return (
        f"{_q(exe)} -y --exit-immediately -c mini_textbased.yaml"
        f" --model-class litellm_textbased{model} -l 0"
        f" -o {_q(job.io / 'mini.traj.json')} -t {_task_text(job)}"
    )


def _mini_env(job: Job) -> dict[str, str]:
    quiet = {"MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1"}
    # A model litellm has no price for (a local one) is no error; its cost is unknown.
    return {**quiet, "MSWEA_COST_TRACKING": "ignore_errors", **_litellm_env(job)}


# --- aider -------------------------------------------------------------------------------


def _aider_argv(exe: str, job: Job) -> str:
    io = job.io
    model = ""
    if job.endpoint:
        model = f" --model {_q(job.endpoint.litellm_name)}"
        if job.endpoint.base_url and job.endpoint.wire == "openai":
            model += f" --openai-api-base {_q(job.endpoint.base_url)}"
    # No commits (the worktree's change is the candidate), no .gitignore edit, nothing of
    # its own written into the worktree, no prompt waiting for a person.
    quiet = (
        "--yes-always --no-auto-commits --no-dirty-commits --no-gitignore --no-check-update"
        " --no-analytics --no-show-model-warnings --no-show-release-notes --no-pretty"
        " --no-stream --no-fancy-input --no-auto-lint --no-auto-test --no-detect-urls"
        " --no-suggest-shell-commands --edit-format diff"
    )
    return (
        f"{_q(exe)} {quiet}{model} --chat-history-file {_q(io / '.aider.chat.history.md')}"
        f" --input-history-file {_q(io / '.aider.input.history')}"
        f" --message-file {_q(job.task_file)}"
    )


def _litellm_env(job: Job) -> dict[str, str]:
    return {**LITELLM_OFFLINE, **key_env(job.endpoint, LITELLM_NAMES)}


# --- Claude Code, Codex, Gemini CLI -----------------------------------------------------


def _claude_argv(exe: str, job: Job) -> str:
    model = f" --model {_q(job.endpoint.model)}" if job.endpoint else ""
    # Its own permission prompts have no one to answer them: the proposer sandbox is
    # what confines it. stream-json on stdout is its whole trajectory.
    return (
        f"{_q(exe)} -p --output-format stream-json --verbose"
        f" --dangerously-skip-permissions{model} < {_q(job.task_file)}"
    )


def _claude_env(job: Job) -> dict[str, str]:
    env = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    return {**env, **key_env(job.endpoint, {"anthropic": "ANTHROPIC_API_KEY",
                                          "anthropic_url": "ANTHROPIC_BASE_URL"})}  # fmt: skip


def _codex_argv(exe: str, job: Job) -> str:
    options = ""
    if job.endpoint:
        options = f" -m {_q(job.endpoint.model)}"
        if job.endpoint.base_url:
            provider = "model_providers.selfforge"
            options += (
                f" -c {provider}.name=selfforge"
                f" -c {_q(provider + '.base_url=' + job.endpoint.base_url)}"
                f" -c {provider}.env_key=OPENAI_API_KEY -c {provider}.wire_api=responses"
                " -c model_provider=selfforge"
            )
    # Its own sandbox (Landlock, seccomp) cannot nest in bubblewrap's; ours confines it.
    return (
        f"{_q(exe)} exec --json --skip-git-repo-check --sandbox danger-full-access{options}"
        f" - < {_q(job.task_file)}"
    )


def _gemini_argv(exe: str, job: Job) -> str:
    model = f" -m {_q(job.endpoint.model)}" if job.endpoint else ""
    return f"{_q(exe)} --yolo --output-format json{model} -p {_task_text(job)}"


def _gemini_env(job: Job) -> dict[str, str]:
    """With a model of ours, the API-key sign-in in a settings home of its own (the
    user's settings may choose another); the worktree is trusted (no prompt)."""
    env = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    if job.endpoint is None:
        return env
    home = job.io / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    chosen = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(chosen))
    env["GEMINI_CLI_HOME"] = str(home)
    names = {"gemini": "GEMINI_API_KEY", "gemini_url": "GOOGLE_GEMINI_BASE_URL"}
    return {**env, **key_env(job.endpoint, names)}


# --- anything else ------------------------------------------------------------------------


def command_adapter(template: str) -> Adapter:
    """``cmd:TEMPLATE``: a shell command of the user's; ``{task_file}`` is replaced by
    the task file's path and ``{task}`` by the task's text (both quoted); the variables
    SELFFORGE_TASK and SELFFORGE_TASK_FILE hold them too."""
    if not template.strip():
        raise UsageError('--agent "cmd:" needs a command, e.g. --agent "cmd:my-agent {task_file}"')

    def argv(exe: str, job: Job) -> str:
        return template.replace("{task_file}", _q(job.task_file)).replace("{task}", _task_text(job))

    return Adapter("cmd", "", "", argv, files=lambda root: command_files(template, root))


# The providers' keys litellm (mini-swe-agent, aider) reads, for a model its own
# configuration names.
_LITELLM_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY")
ADAPTERS: dict[str, Adapter] = {
    "mini": Adapter(
        "mini", "mini", "pip install mini-swe-agent, or selfforge[agents]", _mini_argv,
        env=_mini_env, config=(".config/mini-swe-agent",), trajectory="mini.traj.json",
        steps=records.mini_steps, spend=records.mini_spend, keys=_LITELLM_KEYS,
    ),
    "aider": Adapter(
        "aider", "aider", "pipx install aider-chat (it pins its dependencies: a venv of its "
        "own)", _aider_argv, env=_litellm_env,
        config=(".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json"),
        trajectory=".aider.chat.history.md", steps=records.aider_steps,
        spend=records.aider_spend, keys=_LITELLM_KEYS,
    ),
    "claude": Adapter(
        "claude", "claude", "npm install -g @anthropic-ai/claude-code", _claude_argv,
        env=_claude_env, copied=(".claude/settings.json", ".claude/.credentials.json",
                                 ".claude/CLAUDE.md", ".claude.json"),
        steps=records.claude_steps, spend=records.claude_spend, shown=_node_package,
        keys=("ANTHROPIC_API_KEY",),
    ),
    "codex": Adapter(
        "codex", "codex", "npm install -g @openai/codex", _codex_argv,
        env=lambda j: key_env(j.endpoint, {"openai": "OPENAI_API_KEY"}),
        copied=(".codex/config.toml", ".codex/auth.json", ".codex/AGENTS.md"),
        steps=records.codex_steps, spend=records.codex_spend, shown=_node_package,
        keys=("OPENAI_API_KEY", "CODEX_API_KEY"),
    ),
    "gemini": Adapter(
        "gemini", "gemini", "npm install -g @google/gemini-cli", _gemini_argv,
        env=_gemini_env,
        copied=(".gemini/settings.json", ".gemini/oauth_creds.json",
                ".gemini/google_accounts.json", ".gemini/GEMINI.md"),
        steps=records.gemini_steps, spend=records.gemini_spend,
        shown=_node_package, keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
}  # fmt: skip
ALIASES = {"mini-extra": "mini", "mini-swe-agent": "mini", "claude-code": "claude"}


def adapter_for(name: str) -> Adapter:
    """The adapter ``--agent NAME`` names; a one-line error listing the names otherwise."""
    if name.startswith("cmd:"):
        return command_adapter(name.removeprefix("cmd:"))
    found = ADAPTERS.get(ALIASES.get(name, name))
    if found is None:
        names = ", ".join([*ADAPTERS, *ALIASES])
        raise UsageError(f'--agent {name!r}: use one of {names}, or "cmd:COMMAND {{task_file}}"')
    return found
