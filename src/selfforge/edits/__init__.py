"""The edit engine: read a model's reply, apply its edits to a repository, all or none.

    result = apply_response(root, reply, protected=["selfforge.toml"])
    if not result.ok:
        ask_model(result.feedback())

Formats: SEARCH/REPLACE blocks, whole-file blocks, unified diffs (see ``FORMATS``).
"""

from selfforge.edits.apply import apply_response
from selfforge.edits.carry import carry_over
from selfforge.edits.formats import (
    FORMAT_RULES,
    FormatRule,
    default_format_for,
    format_instructions,
)
from selfforge.edits.parse import parse_edits
from selfforge.edits.records import FORMATS, ApplyResult, Edit, EditFailure

__all__ = [
    "FORMATS",
    "FORMAT_RULES",
    "ApplyResult",
    "Edit",
    "EditFailure",
    "FormatRule",
    "apply_response",
    "carry_over",
    "default_format_for",
    "format_instructions",
    "parse_edits",
]
