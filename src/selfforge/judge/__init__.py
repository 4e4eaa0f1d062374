"""The judge: everything that decides whether a candidate lands.

The decisions sit at the top (the stages, the gates, the test contract, the criterion,
the baseline, ``decision.py`` and the one vocabulary of outcomes, ``outcome.py``); three
layers below them: ``sandbox/`` (running a check's commands), ``runners/`` (one adapter
per test runner, listed in ``runners/registry.py``) and ``rules/`` (what reads a change).

May import context, ui, roles, journal, edits, repo, config, models and errors
(ARCHITECTURE.md's table); never run/, propose/ or cli/: what decides does not depend
on what proposes.
"""
