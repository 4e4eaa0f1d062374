"""Context and memory: the codebase index, repo map, file choice, blast radius, budgets.

The core loop calls ``build_context`` for what a model sees, ``assemble_sections`` to
fit a prompt into the context window, and ``blast_radius`` for the tests to run first.
"""

from selfforge.context.assemble import AssembledPrompt, assemble_sections
from selfforge.context.blast import BlastRadius, blast_radius
from selfforge.context.build import ContextBundle, FileContext, build_context
from selfforge.context.index import CodeIndex, IndexStats, open_index

__all__ = [
    "AssembledPrompt",
    "BlastRadius",
    "CodeIndex",
    "ContextBundle",
    "FileContext",
    "IndexStats",
    "assemble_sections",
    "blast_radius",
    "build_context",
    "open_index",
]
