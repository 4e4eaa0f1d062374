"""The edit engine: read a model's reply, apply its edits to a repository, all or none.

    result = apply_response(root, reply, protected=["selfforge.toml"])
    if not result.ok:
        repair_prompt = result.feedback()   # one actionable message per failed edit

Formats (``FORMATS``): SEARCH/REPLACE blocks, whole-file blocks, unified diffs. Every
format in a reply is read; the one the model was asked for reads first.

Where an edit lands (``match.locate``): the exact lines first; then, only if nothing
matched, trailing whitespace ignored, blank lines at the edges dropped, a uniform
indentation shift (spaces or tabs; the replacement is re-indented), line numbers copied
from feedback, and `...` elision. A rung matching more than one place refuses.

What may be written (``safety``): inside the root, never `.git/` or `.selfforge/`, never
through a symlink leading out, never a protected glob. Whole-file blocks that drop most
of a file or hold placeholders are refused. Nothing is written unless every edit applies.

May import repo (reading a tree, the protected paths), config, models and errors.
"""

from selfforge.edits.apply import apply_response
from selfforge.edits.carry import carry_over
from selfforge.edits.formats import (
    FORMAT_RULES,
    FORMATS,
    FormatRule,
    default_format_for,
    format_instructions,
)
from selfforge.edits.parse import parse_edits
from selfforge.edits.records import ApplyResult, Edit, EditFailure

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
