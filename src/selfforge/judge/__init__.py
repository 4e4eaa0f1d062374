"""The judge: everything that decides whether a candidate lands.

May import context, ui, roles, journal, edits, repo, config, models and errors
(ARCHITECTURE.md's table); never run/, propose/ or cli/: what decides does not depend
on what proposes.
"""
