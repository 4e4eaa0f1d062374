"""The run: a session's options into a loop of cycles (``loop``), one attempt
(``attempt``) or best of N (``parallel``), the planner, the gate other agents call
(``check``), the baselines of both (``baselines``), and what a run leaves behind: crash
recovery, ``clean``, ``undo`` and ``rollback``.

May import propose, judge, context, ui, roles, journal, edits, repo, config, models
and errors; imported by cli, web and bench.
"""
