"""The journal: every run, attempt, model call and check in SQLite (``store``), its
numbered migrations (``schema``), and what reads it back: the lessons of past attempts
(``lessons``) and the run's report (``report``).

May import edits, repo, config, models and errors.
"""
