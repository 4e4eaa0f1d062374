"""Token estimates for budgeting prompt sections and the repo map.

Prefer the providers' estimator when it exists so every budget in selfforge agrees;
fall back to four characters a token, which is close enough for English and code.
"""

from __future__ import annotations

try:  # the models package owns the real estimator; it may not exist yet
    from selfforge.models.tokens import estimate_tokens as _provider_estimate
except ImportError:  # pragma: no cover - depends on which modules are present
    _provider_estimate = None


def estimate_tokens(text: str) -> int:
    """Approximate number of tokens ``text`` costs in a prompt."""
    if _provider_estimate is not None:
        return int(_provider_estimate(text))
    return len(text) // 4
