"""What ``selfforge init`` finds: the test command and the linter."""

from __future__ import annotations

import importlib.util
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any


def detect_checks(root: Path, portable: bool = False) -> tuple[str | None, str | None]:
    """``portable``: commands for a shared file (no paths into this machine's installs)."""
    return detect_test(root), detect_lint(root, portable)


def detect_test(root: Path) -> str | None:
    """pytest when the project shows signs of it."""
    if (root / "pytest.ini").exists() or (root / "conftest.py").exists():
        return "python -m pytest -q"
    pyproject = _pyproject(root)
    if "pytest" in pyproject.get("tool", {}) or (root / "tox.ini").exists():
        return "python -m pytest -q"
    for folder in ("tests", "test"):
        if (root / folder).is_dir() and any((root / folder).rglob("test*.py")):
            return "python -m pytest -q"
    if any(root.glob("test_*.py")) or any(root.glob("*_test.py")):
        return "python -m pytest -q"
    return None


def detect_lint(root: Path, portable: bool = False) -> str | None:
    """ruff when it is configured in the project or installed."""
    args = "check --output-format concise ."
    if shutil.which("ruff"):
        return f"ruff {args}"
    if importlib.util.find_spec("ruff") is not None:  # installed beside selfforge only
        if portable:
            return f"ruff {args}"
        return f"{shlex.quote(sys.executable)} -m ruff {args}"
    configured = (
        (root / "ruff.toml").exists()
        or (root / ".ruff.toml").exists()
        or ("ruff" in _pyproject(root).get("tool", {}))
    )
    return f"ruff {args}" if configured else None


def _pyproject(root: Path) -> dict[str, Any]:
    path = root / "pyproject.toml"
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return {}
