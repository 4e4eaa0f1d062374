"""What a person sees while a command runs: the reporters the loop and the judge
call (``reporters``), the live view on a terminal, the dashboard's progress rows, the
output streams and the module-level Rich consoles.

May import roles, journal, edits, repo, config, models and errors (and Rich).
"""
