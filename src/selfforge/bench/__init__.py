"""``selfforge bench``: replay a repository's history through selfforge.

mine (history -> instances) -> run (instance -> result, in a fresh clone) -> report.
Each step is a plain function over the records in ``records.py``; executors only decide
where ``run_job`` executes (a local process pool or Ray).

May import run/ and every part below it (ARCHITECTURE.md's table); imported by cli/.
"""
