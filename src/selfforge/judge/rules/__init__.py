"""The rules that read a change: syntax, lint findings, protected paths and tree safety,
and test integrity (what a change does to existing tests, per language).
"""
