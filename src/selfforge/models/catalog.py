"""The model catalog: providers, default models and per-model facts, from data files.

The bundled ``catalog.toml`` is merged with the user's ``models.toml`` (user config
directory), so default model names, context windows, pacing and price overrides change
without touching code.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from selfforge.errors import ConfigError, UsageError
from selfforge.models.secrets import user_config_dir
from selfforge.models.spec import ModelSpec, parse_spec

BUNDLED = Path(__file__).with_name("catalog.toml")
WIRES = ("gemini", "openai", "anthropic", "ollama")


class ProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    wire: str
    base_url: str
    key_env: tuple[str, ...] = ()
    custom_key_env: tuple[str, ...] = ()
    key_help: str = ""
    default_model: str | None = None
    requests_per_minute: float | None = None
    timeout_s: float = 120.0


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str
    context_window: int | None = None
    edit_format: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    requests_per_minute: float | None = None
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    cached_input_usd_per_mtok: float | None = None


class RetrySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = 6
    backoff_base_s: float = 2.0
    backoff_cap_s: float = 60.0
    max_wait_s: float = 600.0
    # A refused connection: tried CONNECT_TRIES times, waiting this, then twice it.
    connect_backoff_s: float = 0.5


@dataclass(frozen=True)
class Prices:
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None = None


@dataclass(frozen=True)
class ModelFacts:
    context_window: int
    edit_format: str | None
    requests_per_minute: float | None
    max_output_tokens: int
    prices: Prices | None = None
    temperature: float | None = None  # None: send none, the server's default applies


@dataclass(frozen=True)
class Catalog:
    providers: dict[str, ProviderConfig]
    models: tuple[ModelEntry, ...]
    host_keys: dict[str, tuple[str, ...]]
    retry: RetrySettings


_cache: dict[tuple[Path, float | None], Catalog] = {}


def user_catalog_path(env: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(env) / "models.toml"


def load_catalog(env: Mapping[str, str] | None = None) -> Catalog:
    """The bundled catalog with the user's overrides; cached until the user file changes."""
    user = user_catalog_path(env)
    try:
        mtime: float | None = user.stat().st_mtime
    except OSError:
        mtime = None
    key = (user, mtime)
    if key not in _cache:
        _cache[key] = _build(_read(BUNDLED), _read(user) if mtime is not None else {}, user)
    return _cache[key]


def provider_config(name: str, env: Mapping[str, str] | None = None) -> ProviderConfig:
    providers = load_catalog(env).providers
    if name not in providers:
        known = ", ".join(sorted([*providers, "script"]))
        raise UsageError(f"unknown model provider {name!r}; use one of: {known}")
    return providers[name]


def model_facts(spec: str | ModelSpec, env: Mapping[str, str] | None = None) -> ModelFacts:
    """What selfforge knows about a model: window, edit format, pacing, prices."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    catalog = load_catalog(env)
    name = f"{parsed.provider}:{parsed.model}"
    merged: dict[str, Any] = {}
    # Every matching entry contributes the fields that earlier (more specific) ones lack.
    for entry in catalog.models:
        if fnmatchcase(name, entry.match):
            for field, value in entry.model_dump(exclude={"match"}).items():
                if value is not None:
                    merged.setdefault(field, value)
    provider = catalog.providers.get(parsed.provider)
    rpm = merged.get("requests_per_minute")
    if rpm is None and provider is not None:
        rpm = provider.requests_per_minute
    return ModelFacts(
        context_window=int(merged.get("context_window", 32768)),
        edit_format=merged.get("edit_format"),
        requests_per_minute=rpm,
        max_output_tokens=int(merged.get("max_output_tokens", 8192)),
        prices=_prices(merged),
        temperature=merged.get("temperature"),
    )


def key_names(spec: ModelSpec, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Which key variables may be sent to the server a spec names (see catalog.toml)."""
    catalog = load_catalog(env)
    provider = provider_config(spec.provider, env)
    if spec.base_url is None:
        return provider.key_env
    host = (spec.host or "").lower()
    return catalog.host_keys.get(host, provider.custom_key_env)


def default_base_url(spec: ModelSpec, env: Mapping[str, str] | None = None) -> str:
    if spec.base_url:
        return spec.base_url
    if spec.provider == "ollama":
        return ollama_base_url(env)
    return provider_config(spec.provider, env).base_url.rstrip("/")


def ollama_base_url(env: Mapping[str, str] | None = None) -> str:
    """Ollama's own OLLAMA_HOST convention ("host:port" or a URL), else the catalog's."""
    env = os.environ if env is None else env
    host = (env.get("OLLAMA_HOST") or "").strip().rstrip("/")
    if not host:
        return load_catalog(env).providers["ollama"].base_url.rstrip("/")
    if not host.startswith(("http://", "https://")):
        host = "http://" + host
    if host.count(":") == 1:  # no port given
        host += ":11434"
    return host.replace("://0.0.0.0", "://127.0.0.1")


def _prices(merged: dict[str, Any]) -> Prices | None:
    if "input_usd_per_mtok" not in merged or "output_usd_per_mtok" not in merged:
        return None
    return Prices(
        input_usd_per_mtok=merged["input_usd_per_mtok"],
        output_usd_per_mtok=merged["output_usd_per_mtok"],
        cached_input_usd_per_mtok=merged.get("cached_input_usd_per_mtok"),
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def _build(bundled: dict[str, Any], user: dict[str, Any], user_path: Path) -> Catalog:
    unknown = set(user) - {"providers", "models", "host_keys", "retry"}
    if unknown:
        raise ConfigError(
            f"{user_path}: unknown table {sorted(unknown)[0]!r}; "
            "use [providers.NAME], [[models]], [host_keys] or [retry]"
        )
    providers: dict[str, ProviderConfig] = {}
    names = {**bundled.get("providers", {}), **user.get("providers", {})}
    for name in names:
        raw = {
            **bundled.get("providers", {}).get(name, {}),
            **user.get("providers", {}).get(name, {}),
        }
        providers[name] = _validated(
            ProviderConfig, {**raw, "name": name}, user_path, f"providers.{name}"
        )
        if providers[name].wire not in WIRES:
            raise ConfigError(
                f"{user_path}: providers.{name}.wire must be one of {', '.join(WIRES)}"
            )
    models = [
        _validated(ModelEntry, raw, user_path, f"models[{i}]")
        for i, raw in enumerate([*user.get("models", []), *bundled.get("models", [])])
    ]
    host_keys = {**bundled.get("host_keys", {}), **user.get("host_keys", {})}
    retry = {**bundled.get("retry", {}), **user.get("retry", {})}
    return Catalog(
        retry=_validated(RetrySettings, retry, user_path, "retry"),
        providers=providers,
        models=tuple(models),
        host_keys={host.lower(): tuple(names) for host, names in host_keys.items()},
    )


def _validated(cls: type[BaseModel], raw: Any, path: Path, where: str) -> Any:
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{path}: {where}.{field}: {err['msg']}") from None
