"""The exploring proposer's plain-text protocol: each reply holds exactly one action.

A fenced ```bash block (one command), edits in selfforge's edit formats, a line ``DONE``
or a line ``CANNOT: <reason>``. Plain text works with every provider and with small
local models; a reply with no readable action, or more than one, is answered with a
short reminder (``FormatError``) instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selfforge.edits import parse_edits
from selfforge.judge.sandbox.command import CommandResult

HEAD_BYTES = TAIL_BYTES = 4096  # of a command's output shown to the model
_SHELL_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?:bash|sh|shell|console)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S
)
_BARE_FENCE = re.compile(r"^[ \t]*```[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_CANNOT = re.compile(r"^[\W_]*CANNOT[\W_]*?:\s*(.+)$", re.M)
_DONE = re.compile(r"^[\W_]*DONE[\W_]*$", re.M)

REMINDER = (
    "I could not read an action in your reply. Reply with exactly one of:\n"
    "- one shell command in a fenced block: ```bash, the command, ```\n"
    "- edits, in the edit format of the instructions\n"
    "- DONE alone on a line, when the files hold the whole change\n"
    "- CANNOT: <reason>, when the task cannot be done honestly"
)


class FormatError(Exception):
    """A reply with no single readable action; the message is the model's next
    observation (it counts as a step)."""


@dataclass(frozen=True)
class Action:
    kind: str  # bash | edit | done | cannot
    text: str  # the command, the reply holding the edits, or the reason


def parse_action(reply: str, fmt: str) -> Action:
    commands = [m[1].strip() for m in _SHELL_FENCE.finditer(reply)]
    rest = _SHELL_FENCE.sub("", reply)
    edits = parse_edits(rest, fmt) if rest.strip() else []
    if not commands and not edits:  # a bare fence is a command when it is no file
        commands = [m[1].strip() for m in _BARE_FENCE.finditer(reply)]
    if len(commands) > 1:
        raise FormatError(
            f"Your reply held {len(commands)} commands; send one command per turn (join "
            "short ones with && in one block if you must)."
        )
    if commands and edits:
        raise FormatError("Your reply held both a command and edits; send one action per turn.")
    if commands:
        if not commands[0]:
            raise FormatError("Your ```bash block was empty; put one command in it.")
        return Action("bash", commands[0])
    if edits:
        return Action("edit", rest)
    if found := _CANNOT.search(reply):
        return Action("cannot", found[1].strip())
    if _DONE.search(reply):
        return Action("done", "")
    raise FormatError(REMINDER)


def bounded(text: str, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> str:
    """The head and tail of ``text`` (in UTF-8 bytes), with a note of what was cut."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= head + tail:
        return text
    cut = len(data) - head - tail
    first = data[:head].decode("utf-8", errors="ignore")
    last = data[-tail:].decode("utf-8", errors="ignore")
    return (
        f"{first}\n[... {cut:,} bytes of output cut here; {len(data):,} in all: narrow the "
        f"command (grep, head, sed -n) to see the part you need ...]\n{last}"
    )


COMMAND_TIMEOUT = "the command timeout, [model] explore_command_s"
TIME_LEFT = "the time left of the round, [model] explore_seconds"


def observation(result: CommandResult, timeout_s: float, timeout: str = COMMAND_TIMEOUT) -> str:
    """What the model sees of a command: how it ended, its output bounded, and why it
    was killed, if it was (``timeout``: the limit its timeout came from)."""
    if result.timed_out:
        ended = (
            f"The command was killed after {timeout_s:.3g} s ({timeout}); run something quicker."
        )
    elif result.limit:
        ended = f"The command was killed after {result.duration_s:.1f} s (the last line says why)."
    else:
        ended = f"The command exited with code {result.exit_code} in {result.duration_s:.1f} s."
    shown = bounded(result.full_output.rstrip("\n")) or "(no output)"
    notes = [line for line in result.output.splitlines()[-2:] if line.startswith("[killed: hit")]
    return "\n".join([ended, "Output:", shown, *notes])
