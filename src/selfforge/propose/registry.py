"""The proposers by name: the one list ``run --proposer``, ``[model] proposer``,
``run --agent`` and ``bench run --proposer`` are checked against, and the factory each
name makes its proposer with.

A name is a word (``oneshot``, ``explore``), or a word and an argument after a colon
(``agent:NAME``: the coding agent ``run --agent NAME`` names). Adding a proposer is a
module with a class that has ``propose`` (``protocol.Proposer``) and one ``register``
line below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from selfforge.config import ModelSettings
from selfforge.errors import UsageError
from selfforge.propose.agents import adapter_for
from selfforge.propose.explore import Explorer
from selfforge.propose.external import AgentProposer
from selfforge.propose.oneshot import OneShot
from selfforge.propose.protocol import Factory


@dataclass(frozen=True)
class Entry:
    """One proposer as the registry knows it."""

    name: str
    make: Factory  # the proposer of one attempt, from its context
    about: str  # how messages name it: "the exploring proposer"
    runs_commands: bool = False  # in the sandbox only, and one candidate per cycle
    argument: str = ""  # "NAME": spelled name:NAME (agent:claude); "": a word alone
    # checks the argument before a run starts, with the user's checkout
    ready: Callable[[str, Path], object] | None = None


PROPOSERS: dict[str, Entry] = {}


def register(entry: Entry) -> Entry:
    """Add ``entry`` (or replace the one of its name); returns it."""
    PROPOSERS[entry.name] = entry
    return entry


register(Entry("oneshot", OneShot, "the one-shot proposer"))
register(Entry("explore", Explorer, "the exploring proposer", runs_commands=True))
register(
    Entry(
        "agent",
        AgentProposer,
        "the agent",
        runs_commands=True,
        argument="NAME",
        # a usage error naming the agents, the program to install, or a file it cannot see
        ready=lambda name, root: adapter_for(name).ready(root),
    )
)


def spellings(arguments: bool = True) -> str:
    """The names as a person types them, for messages: "oneshot, explore or agent:NAME"
    (``arguments=False``: only the words alone, as ``run --proposer`` takes them)."""
    names = [
        f"{e.name}:{e.argument}" if e.argument else e.name
        for e in PROPOSERS.values()
        if arguments or not e.argument
    ]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def parse(spelled: str) -> tuple[Entry, str] | None:
    """The entry and argument ``spelled`` names (``agent:cmd:true`` → agent, ``cmd:true``),
    or None when it names none (an argument given or missing where it must not be)."""
    name, colon, argument = spelled.partition(":")
    entry = PROPOSERS.get(name)
    if entry is None or bool(entry.argument) != bool(colon) or (colon and not argument):
        return None
    return entry, argument


def word(name: str) -> Entry | None:
    """The proposer ``name`` names as a word alone (``run --proposer``, ``[model]
    proposer``), or None."""
    found = PROPOSERS.get(name)
    return None if found is None or found.argument else found


def chosen(model: ModelSettings) -> tuple[Entry, str]:
    """The run's proposer and its argument, from its [model] settings (checked by
    ``run/session.check_proposer``): an agent when one is named, else ``proposer``."""
    if model.agent:
        return PROPOSERS["agent"], model.agent
    entry = word(model.proposer)
    if entry is None:
        raise UsageError(f"[model] proposer {model.proposer!r}: use {spellings(False)}")
    return entry, ""
