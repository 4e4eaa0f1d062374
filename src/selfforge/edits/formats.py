"""How models are told to write edits, and which format suits which model family.

Strong hosted models quote code exactly and do best with SEARCH/REPLACE; small local
models misquote often and do better rewriting whole files. The rules are data so the
providers' catalog can override them; ``default_format_for`` stays pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORMATS: tuple[str, ...] = ("search_replace", "whole_file", "udiff")

_INSTRUCTIONS = {
    "search_replace": """\
For each change, write the file's path alone on a line, then one SEARCH/REPLACE block:

path/to/file.py
<<<<<<< SEARCH
the exact lines currently in the file
=======
the lines to put in their place
>>>>>>> REPLACE

Rules:
- SEARCH must copy the current lines exactly, including indentation and comments, and
  must match only one place in the file; add unchanged lines around it if needed.
- Use one block per change; several blocks for one file are fine.
- To create a new file, or append to one, leave SEARCH empty.
- To delete lines, leave REPLACE empty.
- Paths are relative to the repository root.""",
    "whole_file": """\
For each file you change, write its path alone on a line, then its complete new
content in a fenced code block:

path/to/file.py
```python
the whole file, every line of it
```

Rules:
- Write out the entire file. Never use placeholders such as `# ... rest of the code
  unchanged`; anything you leave out is deleted.
- To create a new file, do the same with its path.
- Paths are relative to the repository root.""",
    "udiff": """\
Write your changes as a unified diff, like `git diff` prints it:

```diff
--- a/path/to/file.py
+++ b/path/to/file.py
@@ -10,7 +10,7 @@
 unchanged line
-removed line
+added line
 unchanged line
```

Rules:
- Give about 3 unchanged context lines around each change, copied exactly; hunks are
  placed by their content, so each must match exactly one place in the file.
- To create a file use `--- /dev/null`; to delete one use `+++ /dev/null`.
- Paths are relative to the repository root.""",
}


def format_instructions(fmt: str) -> str:
    """The text that tells a model how to write edits in ``fmt`` (used in prompts)."""
    if fmt == "auto":
        fmt = "search_replace"
    if fmt not in FORMATS:
        raise ValueError(f"unknown edit format {fmt!r}; use one of {', '.join(FORMATS)}")
    return _INSTRUCTIONS[fmt]


@dataclass(frozen=True)
class FormatRule:
    pattern: str  # regex searched in the lower-cased model name
    fmt: str
    why: str


# First match wins. Sizes like ":7b" or "-3b" mark small local models.
FORMAT_RULES: tuple[FormatRule, ...] = (
    FormatRule(
        r"(?:^|[:\-_/ ])(?:0?\.\d+|[1-9](?:\.\d+)?)b\b", "whole_file", "at most 9B parameters"
    ),
    FormatRule(r"(?:^|[:\-_/ ])[1-9]\d{1,3}(?:\.\d+)?b\b", "search_replace", "10B or more"),
    FormatRule(
        r"tiny|small|\bphi|gemma[-:]?2?b|smollm|qwen[\d.]*:?0\.5",
        "whole_file",
        "small model family",
    ),
    FormatRule(r"^(?:script):", "search_replace", "scripted replies are written by hand"),
    FormatRule(r"^ollama:|^llamacpp:|^lmstudio:", "whole_file", "local models quote code loosely"),
)
DEFAULT_FORMAT = "search_replace"


def default_format_for(model_name: str, rules: tuple[FormatRule, ...] = FORMAT_RULES) -> str:
    """The edit format to ask this model for: "search_replace" unless a rule says otherwise."""
    name = model_name.strip().lower()
    for rule in rules:
        if re.search(rule.pattern, name):
            return rule.fmt
    return DEFAULT_FORMAT
