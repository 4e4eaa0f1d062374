"""Errors a user can cause or meet, each carrying a one-line cause and fix.

The CLI turns any ``SelfforgeError`` into that one line and its exit code; nothing else
should print a traceback unless ``--debug`` is given.
"""

from __future__ import annotations


class SelfforgeError(Exception):
    """A failure with a message written for the user. Exit code 1."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(SelfforgeError):
    """Bad command-line usage or bad directives. Exit code 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A directives file that cannot be used: names the file, line and key."""


class GitError(SelfforgeError):
    """A git command failed in a way selfforge cannot recover from."""


class LockedError(SelfforgeError):
    """Another selfforge run holds the repository's lock."""


class BudgetExceeded(SelfforgeError):
    """The run's budget (USD or tokens) would be exceeded by the next call."""
