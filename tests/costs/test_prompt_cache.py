"""Provider prompt caching on the cost side: the prompt's shared part, the cache plan, the
ledger's one-hour writes, and the forecast's expected saving, against hand-computed figures."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.prompt_cache import (
    CachePlan,
    cache_mark,
    expected_read_tokens,
    plan_prompt_cache,
    prefix_tokens,
    with_prompt_cache,
)
from mmjudge.costs.sheets import ModelPrice, price_from_entry
from mmjudge.data.loading import load_dataset
from mmjudge.engine.cell import typed_config
from mmjudge.errors import ConfigError
from mmjudge.prompts import render
from mmjudge.records import Forecast, Usage
from mmjudge.store.forecast_file import CellForecast
from tests.helpers import compose_config

SONNET = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_write_1h=6.0, cache_read=0.3)
MINI = ModelPrice(input=0.15, output=0.6, cached_input=0.075)
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "summaries"
LONG = "Grade with care. " * 700  # about 2,800 tokens of shared instructions


def claude(**changes: object) -> ModelConfig:
    settings: dict[str, object] = {
        "name": "claude_sonnet45",
        "provider": "anthropic",
        "model_id": "claude-sonnet-4-5-20250929",
        "prompt_cache_min_tokens": 1024,
    }
    settings.update(changes)
    return ModelConfig(**settings)  # type: ignore[arg-type]


def gpt(**changes: object) -> ModelConfig:
    settings: dict[str, object] = {
        "name": "gpt4o_mini",
        "provider": "openai",
        "model_id": "gpt-4o-mini-2024-07-18",
        "prompt_cache_min_tokens": 1024,
    }
    settings.update(changes)
    return ModelConfig(**settings)  # type: ignore[arg-type]


# -- the prompt's shared part ------------------------------------------------------------------


@pytest.mark.parametrize("modality", ["text", "mm", "image"])
@pytest.mark.parametrize("prompt", ["default", "guidelines", "terse"])
def test_the_shared_part_ends_where_the_query_starts(modality: str, prompt: str) -> None:
    cfg = typed_config(compose_config([f"modality={modality}", f"prompt={prompt}"]))
    examples = iter(load_dataset(cfg.dataset))
    first = next(examples)
    other = next(e for e in examples if e.query != first.query)
    one = render(first, cfg.modality, cfg.prompt, cfg.dataset, n_images=1)
    two = render(other, cfg.modality, cfg.prompt, cfg.dataset, n_images=1)
    assert "\ue000" not in one.text  # the marker is taken out again
    assert one.static_chars > 0
    assert one.text[: one.static_chars] == two.text[: two.static_chars]
    assert one.text[one.static_chars :].startswith(f"Query: {first.query}")
    assert first.query not in one.text[: one.static_chars]


def test_guidelines_lengthen_the_shared_part() -> None:
    plain = typed_config(compose_config(["prompt=default"]))
    long = typed_config(compose_config(["prompt=guidelines"]))
    example = next(iter(load_dataset(plain.dataset)))
    short_part = render(example, plain.modality, plain.prompt, plain.dataset, 0).static_chars
    long_part = render(example, long.modality, long.prompt, long.dataset, 0).static_chars
    assert long_part > short_part + len(long.dataset.guidelines.strip())


# -- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("prompt_cache", "on"), ("prompt_cache_ttl", "10m")])
def test_a_prompt_cache_setting_outside_its_choices_is_refused_in_one_line(
    name: str, value: str
) -> None:
    runner = RunnerConfig(**{name: value})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"runner.{name}") as caught:
        runner.validate()
    assert "\n" not in str(caught.value)


def test_a_minimum_below_one_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"model\.prompt_cache_min_tokens"):
        claude(prompt_cache_min_tokens=0).validate()


# -- the plan ---------------------------------------------------------------------------------


def test_a_long_shared_part_is_marked_for_anthropic() -> None:
    plan = plan_prompt_cache(RunnerConfig(), claude(), "system", LONG)
    assert plan.cached and plan.style == "marked" and plan.skipped == ""
    assert plan.prefix_tokens == prefix_tokens("system", LONG, "anthropic", claude().model_id)
    assert plan.prefix_tokens > 1024


def test_off_and_uncached_providers_plan_nothing_and_say_nothing() -> None:
    off = plan_prompt_cache(RunnerConfig(prompt_cache="off"), claude(), None, LONG)
    assert off == CachePlan("", 0, "")
    compatible = gpt(provider="openai_compatible", name="llama")
    assert plan_prompt_cache(RunnerConfig(), compatible, None, LONG) == CachePlan("", 0, "")


def test_a_short_part_is_skipped_and_the_plan_says_why() -> None:
    plan = plan_prompt_cache(RunnerConfig(), claude(prompt_cache_min_tokens=4096), None, LONG)
    assert not plan.cached
    assert plan.skipped == (
        f"the shared part is {plan.prefix_tokens:,} tokens, below "
        "claude-sonnet-4-5-20250929's minimum of 4,096"
    )


def test_a_model_without_a_minimum_is_skipped() -> None:
    plan = plan_prompt_cache(RunnerConfig(), claude(prompt_cache_min_tokens=None), None, LONG)
    assert plan.skipped == "model 'claude_sonnet45' sets no prompt_cache_min_tokens"


def test_requests_with_images_are_offered_to_both_providers_caches() -> None:
    """Anthropic's marked requests show the shared part before any image, OpenAI's the
    prompt before its images: either way the part leads."""
    assert plan_prompt_cache(RunnerConfig(), claude(), None, LONG).style == "marked"
    assert plan_prompt_cache(RunnerConfig(), gpt(), None, LONG).style == "automatic"


def test_the_mark_carries_the_ttl_and_a_key_per_query() -> None:
    runner = RunnerConfig(prompt_cache_ttl="1h")
    mark = cache_mark(runner, claude(), 120, "red dress")
    assert mark is not None and (mark.prefix_chars, mark.ttl) == (120, "1h")
    assert mark.key == cache_mark(runner, claude(), 99, "red dress").key  # type: ignore[union-attr]
    assert mark.key != cache_mark(runner, claude(), 120, "blue skirt").key  # type: ignore[union-attr]


def test_the_mark_is_decided_without_counting_tokens() -> None:
    """Where the plan offers nothing before counting, no mark; a part the plan finds too short
    once counted is marked all the same (the provider caches nothing, at no charge), so that a
    rerun answered from the response cache loads no tokenizer."""
    runner = RunnerConfig()
    assert cache_mark(RunnerConfig(prompt_cache="off"), claude(), 120, "q") is None
    assert cache_mark(runner, claude(prompt_cache_min_tokens=None), 120, "q") is None
    assert cache_mark(runner, claude(), 0, "q") is None
    short = claude(prompt_cache_min_tokens=100_000)
    assert not plan_prompt_cache(runner, short, None, LONG).cached
    assert cache_mark(runner, short, len(LONG), "q") is not None
    compatible = gpt(provider="openai_compatible", name="llama")
    assert cache_mark(runner, compatible, 120, "q") is None


@pytest.mark.parametrize(
    ("style", "prefix", "expected"),
    [("marked", 1500, 1500), ("automatic", 1500, 1024 + 3 * 128), ("automatic", 1024, 1024)],
)
def test_expected_reads(style: str, prefix: int, expected: int) -> None:
    assert expected_read_tokens(CachePlan(style, prefix, ""), 1024) == expected


# -- the ledger ------------------------------------------------------------------------------


def test_one_hour_writes_are_priced_at_their_own_rate() -> None:
    usage = Usage(
        input_tokens=1000 + 2000 + 3000 + 500,
        output_tokens=10,
        cached_input_tokens=1000,
        cache_write_tokens=5000,
        cache_write_1h_tokens=3000,
    )
    # 500 plain x 3 + 1000 read x 0.3 + 2000 5-minute x 3.75 + 3000 hour x 6 + 10 out x 15
    expected = (500 * 3 + 1000 * 0.3 + 2000 * 3.75 + 3000 * 6.0 + 10 * 15) / 1e6
    assert cost_of(usage, SONNET).total_usd == pytest.approx(expected)
    without = dataclasses.replace(SONNET, cache_write_1h=None)
    at_five_minutes = (500 * 3 + 1000 * 0.3 + 5000 * 3.75 + 10 * 15) / 1e6
    assert cost_of(usage, without).total_usd == pytest.approx(at_five_minutes)


def test_the_sheet_reads_the_one_hour_price_and_a_tier_scales_it() -> None:
    entry = {
        "input": 3.0,
        "output": 15.0,
        "cache_write": 3.75,
        "cache_write_1h": 6.0,
        "cache_read": 0.3,
        "tiers": [{"above_input_tokens": 200_000, "input": 6.0, "output": 22.5}],
    }
    price = price_from_entry("claude", entry)
    assert price.cache_write_1h == 6.0
    assert price.at(200_001).cache_write_1h == pytest.approx(12.0)


def test_usage_files_keep_their_keys_without_hour_writes() -> None:
    assert "cache_write_1h_tokens" not in Usage(input_tokens=5).to_dict()
    hour = Usage(input_tokens=5, cache_write_tokens=5, cache_write_1h_tokens=5)
    assert Usage.from_dict(hour.to_dict()) == hour


# -- the forecast ----------------------------------------------------------------------------


def call_forecast(price: ModelPrice, input_tokens: int = 3000) -> Forecast:
    usage = Usage(input_tokens=input_tokens, output_tokens=20)  # type: ignore[arg-type]
    return Forecast(
        calls=1,
        input_tokens=input_tokens,
        output_tokens=20,
        usd=cost_of(usage, price).total_usd,
    )


def test_the_forecast_reads_the_shared_part_from_the_cache() -> None:
    plan = CachePlan("marked", 2500, "")
    forecast = with_prompt_cache(call_forecast(SONNET), plan, SONNET, 1024)
    # 500 plain x 3 + 2500 read x 0.3 + 20 out x 15, against 3000 x 3 + 20 x 15 at list price
    assert forecast.usd == pytest.approx((500 * 3 + 2500 * 0.3 + 20 * 15) / 1e6)
    assert forecast.cache_saved_usd == pytest.approx(2500 * (3 - 0.3) / 1e6)
    assert forecast.cached_input_tokens == 2500


def test_openai_reads_in_steps_of_128_at_its_cached_price() -> None:
    plan = CachePlan("automatic", 2500, "")
    forecast = with_prompt_cache(call_forecast(MINI), plan, MINI, 1024)
    read = 1024 + 11 * 128  # 2,432
    assert forecast.cached_input_tokens == read
    assert forecast.usd == pytest.approx(((3000 - read) * 0.15 + read * 0.075 + 20 * 0.6) / 1e6)


def test_a_skipped_plan_leaves_the_dollars_and_says_why() -> None:
    listed = call_forecast(SONNET)
    forecast = with_prompt_cache(listed, CachePlan("", 600, "too short"), SONNET, 1024)
    assert forecast.usd == listed.usd and forecast.cache_saved_usd == 0
    assert forecast.prompt_cache == "too short"


def cell(forecast: Forecast) -> CellForecast:
    return CellForecast(
        dataset="demo",
        model="claude_sonnet45",
        model_id="claude-sonnet-4-5-20250929",
        modality="text",
        prompt_id="guidelines",
        pricing_sheet="2026-10-31",
        sync=forecast,
        batch=forecast,
        batch_discount=0.5,
    )


def test_the_dry_run_line_tells_the_saving_or_why_there_is_none() -> None:
    total = Forecast()
    for _ in range(4):
        total.add(
            with_prompt_cache(call_forecast(SONNET), CachePlan("marked", 2500, ""), SONNET, 1024)
        )
    saved = 4 * 2500 * 2.7 / 1e6  # $0.027
    line = cell(total).line()
    assert "prompt cache: 10,000 of 12,000 input tokens read from it, $0.027 (" in line
    assert f"({saved / (total.usd + saved):.0%}) below list price" in line
    skipped = with_prompt_cache(
        call_forecast(SONNET), CachePlan("", 600, "too short"), SONNET, 1024
    )
    assert "prompt cache skipped: too short" in cell(skipped).line()
    assert "prompt cache" not in cell(call_forecast(SONNET)).line()


def test_the_forecast_file_keeps_its_keys_without_caching_and_round_trips_with_it() -> None:
    plain = call_forecast(SONNET).to_dict()
    assert not {"cached_input_tokens", "cache_saved_usd", "prompt_cache"} & set(plain)
    cached = with_prompt_cache(call_forecast(SONNET), CachePlan("marked", 2500, ""), SONNET, 1024)
    back = CellForecast.from_dict(cell(cached).to_dict())
    assert back.sync.cached_input_tokens == 2500
    assert back.sync.cache_saved_usd == pytest.approx(cached.cache_saved_usd)


# -- the summary's block ---------------------------------------------------------------------


def test_the_summary_block_tells_the_hit_rate_and_the_saving() -> None:
    import pandas as pd

    from mmjudge.costs.calls import CallPricer
    from mmjudge.costs.run_dollars import prompt_cache_use
    from mmjudge.store import PromptCacheUse, RunSummary

    frame = pd.DataFrame(
        {
            "input_tokens": [3000, 3000, 3000, 500],
            "output_tokens": [10, 10, 10, 10],
            "image_tokens": [0, 0, 0, 0],
            "cached_input_tokens": [0, 2500, 2500, 0],
            "cache_write_tokens": [2500, 0, 0, 0],
            "cache_write_1h_tokens": [0, 0, 0, 0],
            "batch": [False, False, True, False],
        }
    )
    use = prompt_cache_use(frame, CallPricer(SONNET, claude()))
    # The write costs 2500 x 0.75 more, each read saves 2500 x 2.7, the batch one at half.
    saved = (-2500 * 0.75 + 2500 * 2.7 + 2500 * 2.7 * 0.5) / 1e6
    assert use == PromptCacheUse(
        input_tokens=9500,
        read_tokens=5000,
        write_tokens=2500,
        hit_rate=pytest.approx(5000 / 9500),  # type: ignore[arg-type]
        saved_usd=pytest.approx(saved),  # type: ignore[arg-type]
        saved_usd_per_million=pytest.approx(saved / 4 * 1e6),  # type: ignore[arg-type]
    )
    assert use is not None
    summary = RunSummary.from_json(json.loads((FIXTURES / "v1_complete.json").read_text()))
    with_block = dataclasses.replace(
        summary, parts=dataclasses.replace(summary.parts, prompt_cache=use)
    )
    written = with_block.to_json()
    assert written["prompt_cache"]["read_tokens"] == 5000
    assert RunSummary.from_json(written).prompt_cache == use
    assert "prompt_cache" not in summary.to_json()
    untouched = frame.assign(cached_input_tokens=0, cache_write_tokens=0)
    assert prompt_cache_use(untouched, CallPricer(SONNET, claude())) is None
