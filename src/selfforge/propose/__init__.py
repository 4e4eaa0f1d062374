"""Proposers: what turns a task into a candidate change in the attempt's worktree.

Every proposer has one interface (``protocol.py``): made once per attempt from a
``ProposerContext`` (the worktree, base, task, caller, journal, check space, edit format
and the rest an attempt hands down), it leaves a change in the worktree each round and
returns a ``Proposal``. ``registry.py`` names them (oneshot, explore, agent:NAME) for
``run``, the directives and ``bench``. The one-shot proposer (``oneshot.py``) is one
model call answering with edits; the exploring proposer (``explore.py``) an agent loop in
which the model runs commands in the check sandbox, edits, and says when it is done, with
the protocol of its replies (``actions.py``) and its journaled trajectory
(``trajectory.py``); outside coding agents (``external.py``, adapters in ``agents.py``)
run once per round. ``worktree.py`` is the sandbox they work in, whose git shows only the
past of the base, and the worktree change that becomes the candidate. What a proposer
produces is committed, judged by ``judge/`` and landed by ``run/attempt.py`` exactly as
any other candidate.

May import judge, context, ui, roles, journal, edits, repo, config, models and errors;
never run (not even for a type: the attempt hands a ``ProposerContext``, not itself).
"""
