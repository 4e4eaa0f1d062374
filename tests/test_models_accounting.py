"""Cost from genai-prices or the catalog, budgets enforced before calls, pacing, retries."""

from __future__ import annotations

import pytest

from selfforge.errors import BudgetExceeded
from selfforge.models import Message, Reply, Request, Usage, parse_spec
from selfforge.models.base import QuotaExhausted, RateLimited
from selfforge.models.budget import Budget
from selfforge.models.catalog import ModelFacts, Prices, model_facts
from selfforge.models.http import Pacer, parse_delay
from selfforge.models.pricing import cost_usd

from provider_fakes import FakeTime, fake_gemini


def ask(text: str = "Fix add()", max_output: int | None = None) -> Request:
    return Request(role="propose", messages=[Message("user", text)], max_output_tokens=max_output)


def test_cost_from_genai_prices_counts_cache_reads_cheaper() -> None:
    facts = model_facts("gemini:gemini-2.5-flash")
    spec = parse_spec("gemini:gemini-2.5-flash")
    plain = cost_usd(spec, Usage(input_tokens=1_000_000, output_tokens=0), facts)
    cached = cost_usd(spec, Usage(input_tokens=1_000_000, cached_tokens=500_000), facts)
    assert plain is not None and cached is not None and 0 < cached < plain
    with_output = cost_usd(spec, Usage(input_tokens=1000, output_tokens=1000), facts)
    assert with_output is not None and with_output > 0


def test_cost_is_zero_locally_and_unknown_for_unknown_models() -> None:
    facts = model_facts("openai:x")
    assert cost_usd(parse_spec("ollama:qwen2.5-coder:7b"), Usage(1000, 100), facts) == 0.0
    assert (
        cost_usd(parse_spec("openai:m@http://192.168.1.5:8000/v1"), Usage(1000, 100), facts) == 0.0
    )
    assert cost_usd(parse_spec("openai:no-such-model-xyz"), Usage(1000, 100), facts) is None
    assert (
        cost_usd(parse_spec("openai:gpt-4.1-mini@https://llm.example.com/v1"), Usage(10, 1), facts)
        is None
    )


def test_catalog_prices_override_genai_prices() -> None:
    facts = ModelFacts(32768, None, None, 8192, Prices(1.0, 10.0, 0.1))
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cached_tokens=500_000)
    assert cost_usd(parse_spec("gemini:gemini-2.5-flash"), usage, facts) == pytest.approx(
        0.5 + 0.05 + 1.0
    )


def test_user_models_toml_prices_reach_replies(httpserver) -> None:
    fake = fake_gemini(httpserver, ["ok"])
    (fake.config_dir / "models.toml").write_text(
        '[[models]]\nmatch = "gemini:*"\nrequests_per_minute = 0\n'
        "input_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n"
    )
    fake.usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 500_000,
        "cached_tokens": 0,
        "thinking_tokens": 0,
    }
    assert fake.model().complete(ask()).cost_usd == pytest.approx(2.0)


def test_budget_tokens_checked_before_the_call() -> None:
    budget = Budget(tokens=1000, spent_tokens=900)
    budget.check(ask(), 50)
    with pytest.raises(BudgetExceeded, match=r"token budget \(1,000\).*900 spent"):
        budget.check(ask(max_output=100), 50)


def test_budget_usd_and_record() -> None:
    budget = Budget(usd=1.0)
    budget.record(Reply("x", Usage(100, 20), cost_usd=0.75))
    budget.record(Reply("y", Usage(10, 2), cost_usd=None))
    assert budget.spent_usd == 0.75 and budget.spent_tokens == 132 and budget.unpriced_calls == 1
    budget.check(ask(), 10, estimated_cost_usd=0.2)
    with pytest.raises(BudgetExceeded, match=r"\$1\.00 would be exceeded: \$0\.7500 spent"):
        budget.check(ask(), 10, estimated_cost_usd=0.3)
    with pytest.raises(BudgetExceeded):
        Budget(usd=1.0, spent_usd=1.0).check(ask(), 10)


def test_budget_projects_unpriced_calls_from_the_runs_average() -> None:
    budget = Budget(usd=1.0, spent_usd=0.9, spent_tokens=90_000)  # $0.00001 per token
    budget.check(ask(), 9_000)
    with pytest.raises(BudgetExceeded, match=r"costs about \$0\.1100"):
        budget.check(ask(max_output=2_000), 9_000)
    Budget(usd=0.0).check(ask(), 1_000_000)  # free models run on a $0 budget


def test_the_budget_is_checked_before_every_call(httpserver, tmp_path) -> None:
    """One budget check, in the Caller every model call goes through."""
    from selfforge.journal.store import Journal
    from selfforge.roles.caller import Caller

    fake = fake_gemini(httpserver, ["one", "two"])
    budget = Budget(tokens=400)
    with Journal(tmp_path / "journal.db") as journal:
        caller = Caller(fake.model(), journal, budget)
        caller.ask("propose", "hello")
        assert budget.spent_tokens == 150
        with pytest.raises(BudgetExceeded):
            caller.ask("propose", "x " * 600)
    assert len(fake.requests) == 1  # the second call was never sent


def test_pacer_spaces_calls() -> None:
    clock = FakeTime()
    pacer = Pacer(requests_per_minute=600, clock=clock.monotonic, sleep=clock.sleep)
    for _ in range(3):
        pacer.wait()
    assert clock.waits == pytest.approx([0.1, 0.1])  # one call per 0.1 s


def test_pacer_defer_holds_every_caller() -> None:
    clock = FakeTime()
    pacer = Pacer(None, clock=clock.monotonic, sleep=clock.sleep)
    pacer.defer(0.15)
    pacer.wait()
    pacer.wait()
    assert clock.waits == pytest.approx([0.15])  # the deferral, then unpaced again


def test_pacer_slows_down_after_a_429() -> None:
    pacer = Pacer(requests_per_minute=60)
    pacer.slow_down()
    assert pacer.interval == 1.5
    unpaced = Pacer(None)
    unpaced.slow_down()
    assert unpaced.interval == 0.0


def test_parse_delay_formats() -> None:
    assert parse_delay("43s") == 43
    assert parse_delay("0.5s") == 0.5
    assert parse_delay("7m12.5s") == pytest.approx(432.5)
    assert parse_delay("120") == 120
    assert parse_delay("250ms") == pytest.approx(0.25)
    assert parse_delay("soon") is None and parse_delay(None) is None
    assert parse_delay("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


def test_a_wait_longer_than_max_wait_is_a_quota(httpserver) -> None:
    fake = fake_gemini(httpserver, ["never"])
    fake.rate_limit_once(retry_s=3600)
    with pytest.raises(QuotaExhausted, match="resume it then") as caught:
        fake.model(max_wait_s=60).complete(ask())
    assert caught.value.resets and "UTC" in caught.value.resets
    assert len(fake.requests) == 1


def test_rate_limit_retries_exhausted_stay_rate_limited(httpserver) -> None:
    fake = fake_gemini(httpserver)
    fake.rate_limit_once(0.01)
    fake.rate_limit_once(0.01)
    with pytest.raises(RateLimited, match="gave up after 2 tries"):
        fake.model(max_retries=1).complete(ask())


def test_estimate_cost_for_budget_checks() -> None:
    from selfforge.models.pricing import estimate_cost

    assert estimate_cost("gemini:gemini-2.5-flash", 100_000, 2_000) == pytest.approx(0.035)
    assert estimate_cost("ollama:qwen2.5-coder:7b", 100_000, 2_000) == 0.0
    assert estimate_cost("openai:unknown-model-xyz", 10, 10) is None
