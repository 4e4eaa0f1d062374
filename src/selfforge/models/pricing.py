"""What a call cost, from genai-prices' offline data unless the catalog overrides it.

Local servers cost nothing per token; a remote server selfforge cannot identify has an
unknown price (None) rather than a guess.
"""

from __future__ import annotations

from decimal import Decimal

from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from selfforge.models.base import Usage
from selfforge.models.catalog import ModelFacts, model_facts
from selfforge.models.spec import ModelSpec, parse_spec

# selfforge provider -> genai-prices provider id
_PROVIDER_IDS = {
    "gemini": "google",
    "openai": "openai",
    "anthropic": "anthropic",
    "openrouter": "openrouter",
    "groq": "groq",
}
# Hosts given as @BASE_URL whose prices genai-prices knows.
_HOST_IDS = {
    "generativelanguage.googleapis.com": "google",
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "openrouter.ai": "openrouter",
    "api.groq.com": "groq",
}
_LOCAL_PROVIDERS = {"ollama", "lmstudio", "llamacpp", "vllm"}


def cost_usd(spec: ModelSpec, usage: Usage, facts: ModelFacts) -> float | None:
    """USD for one call's usage; 0.0 for local models, None when the price is unknown."""
    if facts.prices is not None:
        return _from_catalog(usage, facts)
    if spec.provider in _LOCAL_PROVIDERS or spec.is_local:
        return 0.0
    provider_id = _provider_id(spec)
    if provider_id is None:
        return None
    priced = PriceUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cached_tokens or None,
    )
    try:
        total: Decimal = calc_price(
            priced, model_ref=spec.model, provider_id=provider_id
        ).total_price
    except (LookupError, ValueError):
        return None
    return float(total)


def estimate_cost(spec: str | ModelSpec, input_tokens: int, output_tokens: int) -> float | None:
    """USD a call of this size would cost, for checking a budget before sending it."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.provider == "script":
        return 0.0
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return cost_usd(parsed, usage, model_facts(parsed))


def _provider_id(spec: ModelSpec) -> str | None:
    if spec.base_url is None:
        return _PROVIDER_IDS.get(spec.provider)
    if spec.host in _HOST_IDS:
        return _HOST_IDS[spec.host or ""]
    # A proxy in front of Gemini or Anthropic still bills at their prices.
    return _PROVIDER_IDS.get(spec.provider) if spec.provider in ("gemini", "anthropic") else None


def _from_catalog(usage: Usage, facts: ModelFacts) -> float:
    prices = facts.prices
    assert prices is not None
    cached_rate = prices.cached_input_usd_per_mtok
    cached = usage.cached_tokens if cached_rate is not None else 0
    total = (
        (usage.input_tokens - cached) * prices.input_usd_per_mtok
        + cached * (cached_rate or 0.0)
        + usage.output_tokens * prices.output_usd_per_mtok
    )
    return total / 1_000_000
