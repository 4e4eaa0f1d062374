"""A ``cmd:`` agent's program and the files its command names, checked before a run.

The agent runs in the attempt's copy of the code, inside the proposer sandbox, which
hides the user's checkout, their home and every /tmp. A program that sits beside the
repository, in the home or under /tmp would not be found there (the shell's exit 127,
then "no edits"): so before the run starts, each file the command names is either

- shown read-only at its own path in the sandbox: a file named by its absolute path
  outside the checkout (the file itself, never its folder), or a program the shell finds
  on PATH in a place the sandbox hides (``~/.local/bin/my-agent``);
- or refused, with the reason and the fix: a program in the checkout (the agent works in
  a copy: name it relative to the repository's root, committed), a relative path the copy
  will not have (untracked, or outside the repository: give its absolute path), a program
  that does not exist or that the shell does not find.

Words that are not paths (a sed expression, an option, the task's placeholders), shell
syntax (``if``, ``true``, ``VAR=value``), an argument naming a folder or a place in the
checkout (hidden, as it is meant to be) are left to the shell.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from selfforge.errors import UsageError
from selfforge.judge.sandbox.bwrap import PRIVATE
from selfforge.repo import git

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_SYNTAX = frozenset(
    (";", "&", "|", "&&", "||", "(", ")", "{", "}", "!", "if", "then", "else", "elif", "fi",
     "for", "while", "do", "done")
)  # fmt: skip


def command_files(template: str, root: Path) -> tuple[Path, ...]:
    """The files ``template`` (a ``cmd:`` agent's command) names that the proposer
    sandbox would hide, to show read-only; a UsageError naming the reason and the fix for
    one that cannot be shown (``root``: the user's checkout)."""
    try:
        words = shlex.split(template.replace("{task_file}", "").replace("{task}", ""))
    except ValueError:
        return ()  # the shell's own syntax: left to it
    root = root.resolve()
    program = next((w for w in words if not _ASSIGNMENT.match(w)), "")
    shown: list[Path] = []
    for word in words:
        is_program = word == program
        if "/" in word and not word.startswith("-"):
            found = _path_word(word, root, is_program, template)
        elif is_program and word not in _SHELL_SYNTAX:
            found = _on_path(word, template)
        else:
            continue
        if found is not None and found not in shown:
            shown.append(found)
    return tuple(shown)


def _path_word(word: str, root: Path, is_program: bool, template: str) -> Path | None:
    given = Path(word).expanduser()
    path = given if given.is_absolute() else root / given
    if not path.exists():
        if is_program:
            raise UsageError(
                f'--agent "cmd:{template}": its program {word} does not exist'
                + ("" if given.is_absolute() else f" (looked for in {root})")
                + "; give the path of an existing program"
            )
        return None  # an argument that is no file here (a pattern, a URL, a new file)
    resolved = path.resolve()
    inside = resolved == root or root in resolved.parents
    if given.is_absolute():
        if not is_program and (inside or resolved.is_dir()):
            return None  # an argument into the checkout stays hidden, as it is meant to
        if inside:
            raise UsageError(
                f'--agent "cmd:{template}": {word} is in your checkout, which the agent '
                "never sees (it works in a copy of the code, in a sandbox): name it "
                "relative to the repository's root (committed), or keep it outside the "
                "checkout"
            )
        if resolved.is_dir():
            raise UsageError(
                f'--agent "cmd:{template}": {word} is a folder, not a program; name the '
                "program itself"
            )
        at = Path(os.path.abspath(given))  # where the command looks for it (a link to
        return at if _hidden(at) else None  # a hidden place: the sandbox's own concern)
    if inside and git.ok("ls-files", "--error-unmatch", "--", str(resolved), cwd=root):
        return None  # committed: the copy the agent works in has it at the same place
    where = "is not committed" if inside else "is outside the repository"
    raise UsageError(
        f'--agent "cmd:{template}": {word} {where}, so the copy of the code the agent '
        f"runs in has no {word}; give its absolute path ({resolved}): selfforge shows "
        "that file to the agent, read-only"
    )


def _on_path(word: str, template: str) -> Path | None:
    """A bare program name as the agent's shell finds it: None for a builtin or keyword,
    the file when it is in a place the sandbox hides; a UsageError when it is not found."""
    found = subprocess.run(
        ["/bin/sh", "-c", 'command -v -- "$1"', "sh", word],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    )
    if found.returncode != 0:
        raise UsageError(
            f'--agent "cmd:{template}": `{word}` is not on PATH; install it, or give its '
            "absolute path"
        )
    where = found.stdout.strip()
    if not where.startswith("/"):
        return None  # a builtin, a keyword, an alias
    path = Path(where)
    return path if _hidden(path) else None


def _hidden(path: Path) -> bool:
    """Is ``path`` out of the proposer sandbox's sight: in the home (its own is empty),
    or in a place every sandbox has a fresh tmpfs of (/tmp, /var/tmp, /dev/shm, /run)?"""
    places = [Path.home().resolve(), *map(Path, PRIVATE)]
    return any(path == p or p in path.parents for p in places)
