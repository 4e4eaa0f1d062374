"""Test runners: one small adapter per runner, listed in ``registry.py``.

Each adapter says how to make its runner report per-test results (flags or environment),
which toolchain folders and variables the sandbox needs for it (``home_needs``: exactly
what of the user's home), how to narrow a run to some tests, and how to read the outcomes
back into the judge's ``TestReport``; and the facts the rest of selfforge asks about its
runner (``base.Adapter``: test files, configuration files, skip and focus marks, missing
modules, what makes it unrunnable, what ``init`` finds). pytest and unittest report
through the judge's own channel (``python.py``, ``channel.py``).

Where a runner's results come from its output, code under test that writes to the same
stream can add lines; every adapter therefore keeps the worst outcome a test is given,
and checks the runner's own summary against the per-test lines (a disagreement makes
the results untrusted, like an attacked channel). The README's threat model states the
limit.

What every adapter is built on is in ``base.py``; ``registry.detect`` picks the adapter
for a command (the adapters import ``base``, never the registry, so no import runs in a
circle).
"""

from __future__ import annotations

from selfforge.judge.runners.base import Adapter

__all__ = ["Adapter"]
