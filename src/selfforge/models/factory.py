"""Building a ready-to-use model from a spec: catalog facts, key, client, wrapper."""

from __future__ import annotations

import dataclasses
import importlib
import os
import time
from collections.abc import Callable, Mapping

from selfforge.errors import UsageError
from selfforge.models.catalog import (
    default_base_url,
    key_names,
    load_catalog,
    model_facts,
    provider_config,
)
from selfforge.models.generation import Generation
from selfforge.models.http import Endpoint, KeyInfo, Pacer, pacer_for
from selfforge.models.managed import ManagedModel, RetryPolicy
from selfforge.models.secrets import find_key, keys_file
from selfforge.models.spec import ModelSpec

# wire protocol -> "module:Class"; each class takes an Endpoint and fits http.Client.
WIRES: dict[str, str] = {
    "gemini": "selfforge.models.gemini:GeminiClient",
    "openai": "selfforge.models.openai_compat:OpenAIClient",
    "anthropic": "selfforge.models.anthropic:AnthropicClient",
    "ollama": "selfforge.models.ollama:OllamaClient",
}


LOCAL_TIMEOUT_S = 600.0


def build(
    spec: ModelSpec,
    *,
    requests_per_minute: float | None = None,
    timeout_s: float | None = None,
    max_retries: int | None = None,
    backoff_base_s: float | None = None,
    backoff_cap_s: float | None = None,
    max_wait_s: float | None = None,
    env: Mapping[str, str] | None = None,
    on_wait: Callable[[str], None] | None = None,
    generation: Generation | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> ManagedModel:
    """A network model. ``requests_per_minute``: None = the catalog's pacing, 0 = none;
    timeout and retry settings left None come from the catalog (provider, [retry]).
    ``sleep`` and ``clock`` (tests): every wait — back-off, reconnects, pacing — goes
    through them, on a pacer of this model's own instead of the one shared per spec."""
    env = os.environ if env is None else env
    if timeout_s is None:
        timeout_s = provider_config(spec.provider, env).timeout_s
        if spec.is_local:  # a local server sends nothing until the whole reply is ready
            timeout_s = max(timeout_s, LOCAL_TIMEOUT_S)
    endpoint = make_endpoint(spec, timeout_s=timeout_s, env=env)
    if sleep is not None:
        endpoint = dataclasses.replace(endpoint, sleep=sleep)
    module_name, _, class_name = WIRES[provider_config(spec.provider, env).wire].partition(":")
    client = getattr(importlib.import_module(module_name), class_name)(endpoint)
    rpm = endpoint.facts.requests_per_minute if requests_per_minute is None else requests_per_minute
    if sleep is None and clock is None:
        pacer = pacer_for(str(spec), rpm or None)
    else:
        pacer = Pacer(rpm or None, clock=clock or time.monotonic, sleep=sleep or time.sleep)
    return ManagedModel(
        client,
        spec,
        endpoint.facts,
        pacer=pacer,
        policy=_policy(env, max_retries, backoff_base_s, backoff_cap_s, max_wait_s),
        on_wait=on_wait,
        sleep=endpoint.sleep,
        generation=generation,
    )


def _policy(
    env: Mapping[str, str],
    max_retries: int | None,
    base_s: float | None,
    cap_s: float | None,
    max_wait_s: float | None,
) -> RetryPolicy:
    defaults = load_catalog(env).retry
    return RetryPolicy(
        max_retries=defaults.max_retries if max_retries is None else max_retries,
        base_s=defaults.backoff_base_s if base_s is None else base_s,
        cap_s=defaults.backoff_cap_s if cap_s is None else cap_s,
        max_wait_s=defaults.max_wait_s if max_wait_s is None else max_wait_s,
    )


def make_endpoint(spec: ModelSpec, *, timeout_s: float, env: Mapping[str, str]) -> Endpoint:
    provider = provider_config(spec.provider, env)
    names = key_names(spec, env)
    found = find_key(names, env)
    if found is None and provider.key_env and spec.base_url is None:
        raise UsageError(missing_key_message(names, provider.key_help, env))
    return Endpoint(
        spec=spec,
        base_url=default_base_url(spec, env),
        key=found[1] if found else None,
        key_info=KeyInfo(names=names, sent=found[0] if found else None, help_url=provider.key_help),
        facts=model_facts(spec, env),
        timeout_s=timeout_s,
        connect_backoff_s=load_catalog(env).retry.connect_backoff_s,
    )


def missing_key_message(names: tuple[str, ...], help_url: str, env: Mapping[str, str]) -> str:
    first = names[0] if names else "the key"
    return (
        f"{first} is not set: get a key at {help_url}, then `export {first}=...` "
        f'or add {first} = "..." to {keys_file(env)}'
    )
