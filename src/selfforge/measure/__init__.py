"""Measures: the numbers a change may improve or make worse (``[[measures]]`` in the
directives), read from a command run on a worktree in the check sandbox, and compared
between two revisions by runs interleaved until the statistics decide (``selfforge
measure``, and ``check``'s ``measures`` list)."""
