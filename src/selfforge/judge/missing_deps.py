"""A person's commit that adds a dependency and uses it (issue 33.2): the sandbox installs
nothing (no network), so the commit's tests fail for want of what it added. That needs a
person, like the dependency change itself, and is no rejection of a teammate's commit.

Only failures that name a missing module count, and only modules the repository does
not hold itself: a real regression beside them, or a module of the project's own that
went missing, stays a rejection. A model's proposal never gets here: ``run`` refuses a
dependency change before any test runs."""

from __future__ import annotations

import re
from pathlib import Path

from selfforge.judge.runners import registry

# What each runner says when a module is not installed, the module's name first (each
# adapter's own: judge/runners/).
MISSING = registry.missing_module()


def missing_modules(output: str, tree: Path) -> list[str]:
    """The modules ``output`` says are not installed that ``tree`` does not hold."""
    found = {m.group(1) for pattern in MISSING for m in pattern.finditer(output)}
    return sorted(name for name in found if not _own(name, tree))


def _own(name: str, tree: Path) -> bool:
    """A module of the repository itself (its absence is the change's doing)."""
    if name.startswith((".", "/")) or name in ("crate", "self", "super"):
        return True
    top = re.split(r"[./]", name, maxsplit=1)[0]
    places = (tree, tree / "src", tree / "lib")
    return any((p / f"{top}.py").exists() or (p / top).is_dir() for p in places)


def needs_person(review: list[str], person: bool) -> bool:
    """Whether the change is a person's dependency change, listed for review."""
    return person and any("a dependency change" in item for item in review)
