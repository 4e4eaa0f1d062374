"""API keys: where they may come from, and how they are kept out of everything else.

Keys are read only from the environment or from a user config file outside any
repository (``keys.toml`` in the user config directory). Every value read is remembered
so that ``mask`` can blank it wherever text is stored or shown, and ``scrub_env`` keeps
key variables out of the environment of check commands (which run model-written code).
"""

from __future__ import annotations

import base64
import os
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus

from pydantic import SecretStr

from selfforge.errors import ConfigError

# Variables that hold model-provider keys (and a few other common credentials).
SECRET_ENV_VARS: tuple[str, ...] = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "OPENAI_COMPAT_API_KEY",
    "OLLAMA_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "XAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "HF_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_PASSWORD")
# Shorter values are not masked: replacing "1" or "true" everywhere would garble text.
_MIN_MASKED_LEN = 8
MASK = "***"
# Well-known key formats, masked even when the key is not one selfforge read (a key
# pasted into a goal, or echoed by a server in an error).
_KEY_SHAPES = re.compile(
    r"\b(?:AIza[0-9A-Za-z_\-]{35}|sk-ant-[0-9A-Za-z_\-]{20,}|sk-[0-9A-Za-z_\-]{32,}"
    r"|gsk_[0-9A-Za-z]{32,})"
)

_remembered: set[str] = set()
_file_cache: dict[Path, tuple[float, dict[str, str]]] = {}


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_ENV_VARS or upper.endswith(_SECRET_SUFFIXES)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` without key variables, for commands that run untrusted code."""
    return {name: value for name, value in env.items() if not is_secret_name(name)}


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the user's selfforge files live (never inside a repository)."""
    env = os.environ if env is None else env
    if env.get("SELFFORGE_CONFIG_DIR"):
        return Path(env["SELFFORGE_CONFIG_DIR"]).expanduser()
    if sys.platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "selfforge"
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "selfforge"


def keys_file(env: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(env) / "keys.toml"


def get_key(names: Iterable[str], env: Mapping[str, str] | None = None) -> SecretStr | None:
    """The first of ``names`` set in the environment, else in the user keys file."""
    found = find_key(names, env)
    return found[1] if found else None


def find_key(
    names: Iterable[str], env: Mapping[str, str] | None = None
) -> tuple[str, SecretStr] | None:
    """(variable name, key) for the first of ``names`` that is set, env before file."""
    env = os.environ if env is None else env
    names = list(names)
    stored = _read_keys_file(keys_file(env)) if names else {}
    for name in names:
        value = (env.get(name) or stored.get(name) or "").strip()
        if value:
            remember(value)
            return name, SecretStr(value)
    return None


def remember(value: str) -> None:
    """Mask ``value`` from now on, wherever ``mask`` is applied."""
    if len(value) >= _MIN_MASKED_LEN:
        _remembered.add(value)


def remember_file(path: Path) -> None:
    """Mask what a credential file holds — each value on its lines, and each line — from
    now on: the sandbox hides the file, and should its text reach an output anyway (an
    older copy, a toolchain's cache), it is masked there too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        text = os.read(fd, 65536).decode("utf-8", errors="replace")
    except OSError:
        return
    finally:
        os.close(fd)
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "[", "-----")):
            continue
        remember(line)
        value = re.split(r"\s*[=:]\s*", line, maxsplit=1)[-1].strip().strip("\"'")
        remember(value)


def mask(text: str) -> str:
    """``text`` with every known key replaced by ``***``: as written, and base64-, hex- and
    URL-encoded (a payload that prints an encoded key is caught too)."""
    if not text:
        return text
    forms = {f for value in _known_secret_values() for f in encoded_forms(value)}
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            text = text.replace(form, MASK)
    return _KEY_SHAPES.sub(MASK, text)


def encoded_forms(value: str) -> set[str]:
    """The value as written and in the encodings a payload would use to smuggle it.

    base64 of a value inside longer text depends on where it starts: each of the three
    alignments is kept, trimmed of the characters that mix with its neighbours.
    """
    raw = value.encode()
    forms = {value, raw.hex(), raw.hex().upper(), quote(value, safe=""), quote_plus(value)}
    for shift in range(3):
        padded = b"\0" * shift + raw
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(padded).decode().rstrip("=")
            start = (shift * 4 + 2) // 3  # characters that carry the padding bytes
            end = len(text) - (2 if (len(padded) % 3) else 0)
            core = text[start:end]
            if len(core) >= _MIN_MASKED_LEN:
                forms.add(core)
    return {f for f in forms if len(f) >= _MIN_MASKED_LEN}


def _known_secret_values() -> set[str]:
    values = set(_remembered)
    for name, value in os.environ.items():
        if is_secret_name(name) and len(value.strip()) >= _MIN_MASKED_LEN:
            values.add(value.strip())
    try:
        stored = _read_keys_file(keys_file())
    except ConfigError:  # reported where keys are read; masking must never fail
        stored = {}
    values.update(v for v in stored.values() if len(v) >= _MIN_MASKED_LEN)
    return values


def _read_keys_file(path: Path) -> dict[str, str]:
    """``NAME = "value"`` pairs from the keys file; cached until the file changes."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    cached = _file_cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}
    except tomllib.TOMLDecodeError as exc:
        # The message names the position only: echoing the line could print a key.
        hint = 'write lines like GEMINI_API_KEY = "..."'
        raise ConfigError(f"{path}: not valid TOML ({exc}); {hint}") from None
    table = raw.get("keys", raw)
    keys = {str(k): str(v).strip() for k, v in table.items() if isinstance(v, str)}
    _file_cache[path] = (mtime, keys)
    return keys
