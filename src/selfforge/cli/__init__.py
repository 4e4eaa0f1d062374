"""The command line: the ``selfforge`` entry point (``launch``), the resident that
serves it, the Typer program and one module per command area (``commands/``), and what
only a command does: ``init`` (initialize), ``doctor``, ``demo``, ``export``, ``mcp``.

May import every other part; nothing imports ``cli``.
"""
