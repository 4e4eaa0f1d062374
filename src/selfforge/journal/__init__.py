"""The journal: every run, attempt, model call and check in SQLite (``store``), its
numbered migrations (``schema``), and the run's report read back from it (``report``).

May import edits, repo, config, models and errors.
"""
