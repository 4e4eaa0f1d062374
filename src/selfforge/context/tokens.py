"""Token estimates for budgeting prompt sections and the repo map: the providers' one
estimator (``models/tokens.py``), so every budget in selfforge agrees."""

from __future__ import annotations

from selfforge.models.tokens import estimate_tokens

__all__ = ["estimate_tokens"]
