"""Where resident selfforges listen: a folder private to the user, which the sandbox hides
from every check (``sandbox.hidden_places``) and ``launch`` looks in. It imports ``os``
alone: ``launch`` reads it before deciding to hand a command over."""

from __future__ import annotations

import os


def resident_dir() -> str:
    """The folder of this user's resident sockets: private to the user (0700)."""
    chosen = os.environ.get("SELFFORGE_RESIDENT_DIR")
    if chosen:
        return chosen
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "selfforge")
    return f"/tmp/selfforge-{os.getuid()}"
