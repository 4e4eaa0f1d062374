"""A cheap token estimate, good enough to budget prompts before sending them.

BPE tokenizers give roughly one token per common English word, split long identifiers
into ~4-character pieces, and give most punctuation its own token. Counting those three
things tracks real tokenizers on code far better than ``len(text) / 4`` (which
undercounts punctuation-dense code) at the cost of one regex pass.
"""

from __future__ import annotations

import re

_PIECES = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` (never below ``len(text) / 4``)."""
    if not text:
        return 0
    count = 0
    for piece in _PIECES.findall(text):
        n = len(piece)
        count += 1 if n <= 6 else (n + 3) // 4
    # Non-ASCII characters (CJK, emoji) are often one token or more each.
    count += len(_NON_ASCII.findall(text)) // 2
    return max(count, len(text) // 4, 1)
