"""The README's command table and docs/cli.md against the real --help: same commands,
same options, same exit codes, so they cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from selfforge.cli.exit_codes import EXIT_CODES

from conftest import cli

ROOT = Path(__file__).resolve().parents[1]
_ROW = re.compile(r"^\| `selfforge (?P<usage>[^`]+)` \|", re.M)
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b")
# Options every command has, or that the table leaves to --help on purpose.
_IMPLIED = {"-h", "--help", "--install-completion", "--show-completion"}


def readme_rows() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\\|", "|")
    rows = {}
    for m in _ROW.finditer(text):
        usage = m["usage"]
        rows[usage.split()[0]] = usage
    return rows


def help_commands() -> list[str]:
    out = cli("--help", check=True).stdout
    section = out.split("Commands:", 1)[1]
    lines = section.splitlines()
    return [line.split()[0] for line in lines if line.startswith("  ") and line[2] != " "]


def help_options(*command: str) -> set[str]:
    out = cli(*command, "--help", check=True).stdout
    options = out.split("Options:", 1)[1] if "Options:" in out else ""
    found = set()
    for line in options.splitlines():
        if line.startswith("  -"):
            found.update(_OPTION.findall(line.split("  ", 2)[1]))
    # --x / --no-x pairs: the table names the one that changes something.
    pairs = {o for o in found if o.startswith("--no-") and "--" + o[5:] in found}
    return found - pairs - _IMPLIED


def test_the_readme_lists_exactly_the_commands_selfforge_has() -> None:
    assert sorted(readme_rows()) == sorted(help_commands())


@pytest.mark.parametrize("command", sorted(readme_rows()))
def test_each_readme_row_names_the_options_its_help_shows(command: str) -> None:
    usage = readme_rows()[command]
    in_readme = set(_OPTION.findall(usage)) - _IMPLIED
    has_subcommands = command in ("plan", "bench", "resident")
    subcommands = re.findall(r"(?:\[|\| ?)([a-z]+) ", usage) if has_subcommands else []
    in_help = help_options(command)
    for sub in subcommands:
        in_help |= help_options(command, sub)
    assert in_readme == in_help, f"README row for {command}: {usage}"


def test_docs_cli_lists_every_command_and_its_exit_codes() -> None:
    text = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())
    for command in help_commands():
        assert f"selfforge {command}" in text
        assert " ".join(EXIT_CODES[command].split()) in text, command
