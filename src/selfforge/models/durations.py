"""The one duration parser: ``--until 1h30m``, ``log --since 3d``, a server's
``retryDelay`` "43.5s" or "6m0s", "500ms"."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|d|h|m|s)")
_SCALE = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float | None:
    """Seconds in ``text`` written as units (3d, 2h, 45m, 90s, 1h30m, 500ms), or None."""
    clean = re.sub(r"\s", "", text.strip().lower())
    parts = _PART.findall(clean)
    if not parts or "".join(n + u for n, u in parts) != clean:
        return None
    return sum(float(n) * _SCALE[u] for n, u in parts)
