"""selfforge's module-level consoles, remade for each command a resident selfforge runs.

Rich reads the terminal and the environment (colours, FORCE_COLOR, NO_COLOR, COLUMNS)
when a Console is made, and selfforge makes its consoles at import: in a resident
selfforge (selfforge/cli/resident.py) that is in the resident, not for the caller whose
command a worker runs. Consoles made here remember how, and ``remake_consoles`` makes them
again, in place, for the worker's terminal and environment.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

_MADE: list[tuple[Console, dict[str, Any]]] = []


def make_console(**settings: Any) -> Console:
    """A module-level console (one per module: each is kept for ``remake_consoles``)."""
    console = Console(**settings)
    _MADE.append((console, settings))
    return console


def remake_consoles() -> None:
    for console, settings in _MADE:
        console.__init__(**settings)  # type: ignore[misc]
