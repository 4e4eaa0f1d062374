"""Asking the model in a role: the personas, the prompt templates (``prompts/``),
the call that checks the budget and journals itself (``caller``), and what a reply may
hold that is not its answer (``junk``).

May import journal, edits, repo, config, models and errors.
"""
