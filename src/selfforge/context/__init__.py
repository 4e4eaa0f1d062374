"""Context and memory: the codebase index, repo map, file choice, blast radius, budgets.

The core loop calls ``build_context`` for what a model sees, ``assemble_sections`` to
fit a prompt into the context window, and ``blast_radius`` for the tests to run first.
Lessons come from the journal (``journal.lessons.similar_attempts``) and pass through here.

  files.py        which files: git ls-files (tracked + untracked-not-ignored), no binaries
  syntax.py       records parsing produces; lang_python.py, lang_javascript.py per language
  parsing.py      the language table and tree-sitter parsing
  scan.py         read, hash and parse changed files (worker processes when many)
  index.py        SQLite store at .selfforge/index.db, incremental by content hash
  graph.py        import and reference graphs, PageRank
  mentions.py     files and symbols a task names
  repomap.py      ranked, budgeted outline of definitions
  retrieval.py    BM25 (FTS5) + mentions + graph neighbours -> ranked files
  excerpt.py      focused excerpts of large files
  build.py        build_context, map_for_task
  blast.py        importers of a change and the tests to run first
  assemble.py     per-section prompt budgets

May import ui, roles, journal, edits, repo, config, models and errors (ARCHITECTURE.md's
table; today repo, models and errors).
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
