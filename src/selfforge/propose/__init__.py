"""Proposers: what turns a task into a candidate change in the attempt's worktree.

The one-shot proposer (one model call answering with edits) lives in ``run/attempt.py``.
This package holds the exploring proposer (``run --proposer explore``): an agent loop
in which the model runs commands in the check sandbox, edits, and says when it is done
(``explore.py``); the protocol of its replies (``actions.py``); the sandbox it works in,
whose git shows only the past of the attempt's base, and the worktree change that becomes
the candidate (``worktree.py``); and its journaled trajectory (``trajectory.py``). What a
proposer produces is judged by ``judge/`` exactly as any other candidate.

May import judge, context, ui, roles, journal, edits, repo, config, models and errors;
the proposers name ``run.attempt.Attempt`` (which hands itself to them) for typing only.
"""
