"""The cost ledger: image-token rules on documented examples, and the reference study's cost
table recomputed from first principles under the 2024-08-16 sheet."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from mmjudge.config import ModelConfig, PricingConfig, SweepConfig
from mmjudge.costs.image_tokens import (
    anthropic_2024_tokens,
    anthropic_patch_tokens,
    gemini_tokens,
    image_tokens,
    openai_patch_tokens,
    openai_tile_tokens,
)
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import price_for
from mmjudge.errors import ConfigError
from mmjudge.records import Usage
from tests.helpers import compose_option


def sheet(name: str) -> PricingConfig:
    typed = OmegaConf.to_object(compose_option("pricing", name))
    assert isinstance(typed, SweepConfig)
    return typed.pricing


def model(model_id: str, provider: str = "openai") -> ModelConfig:
    return ModelConfig(name=model_id, provider=provider, model_id=model_id)


# --- image-token rules on the providers' documented examples ---------------------------------


@pytest.mark.parametrize(
    ("size", "detail", "expected"),
    [((1024, 1024), "high", 765), ((2048, 4096), "high", 1105), ((4000, 3000), "low", 85)],
)
def test_openai_tile_rule_gpt4o(size: tuple[int, int], detail: str, expected: int) -> None:
    assert openai_tile_tokens(*size, detail, base=85, tile=170) == expected


def test_openai_tile_rule_gpt4o_mini_low_detail() -> None:
    assert openai_tile_tokens(512, 512, "low", base=2833, tile=5667) == 2833


@pytest.mark.parametrize(("size", "patches"), [((1024, 1024), 1024), ((1800, 2400), 1452)])
def test_openai_patch_rule(size: tuple[int, int], patches: int) -> None:
    assert openai_patch_tokens(*size, patch=32, budget=1536, multiplier=1.0) == patches
    assert openai_patch_tokens(*size, patch=32, budget=1536, multiplier=1.62) == pytest.approx(
        patches * 1.62
    )


@pytest.mark.parametrize(
    ("size", "expected"),
    # The provider's worked examples (≈ w·h/750, billed in whole tokens, rounded up).
    [((200, 200), 54), ((1000, 1000), 1334), ((1092, 1092), 1590), ((512, 512), 350)],
)
def test_anthropic_2024_rule_whole_tokens(size: tuple[int, int], expected: int) -> None:
    assert anthropic_2024_tokens(*size) == expected
    assert image_tokens({"rule": "anthropic_2024"}, *size) == expected


def test_anthropic_2024_rule_shrinks_large_images_first() -> None:
    # Long edge over 1,568 px or over ~1,600 tokens: shrunk to whole pixels that fit.
    assert anthropic_2024_tokens(4000, 4000) == 1599  # 1095 × 1095 px
    assert all(
        anthropic_2024_tokens(w, h) <= 1600 for w, h in [(3000, 2000), (1568, 1568), (1568, 784)]
    )


def test_fractional_rules_round_up_to_whole_tokens() -> None:
    rule = {"rule": "openai_patch", "patch": 32, "budget": 1536, "multiplier": 1.62}
    assert image_tokens(rule, 512, 512) == 415  # 256 patches × 1.62 = 414.72
    assert image_tokens({"rule": "fixed", "tokens": 258}, 10, 10) == 258


@pytest.mark.parametrize(
    ("size", "expected"),
    [((200, 200), 64), ((1000, 1000), 1296), ((1092, 1092), 1521), ((1920, 1080), 1560)],
)
def test_anthropic_patch_rule_standard_tier(size: tuple[int, int], expected: int) -> None:
    assert anthropic_patch_tokens(*size) == expected


def test_anthropic_patch_rule_high_resolution_tier() -> None:
    # 69 × 39 patches; the provider's table prints 2688, its own formula gives 2691.
    assert anthropic_patch_tokens(1920, 1080, max_edge=2576, max_tokens=4784) == 2691


def test_gemini_rule() -> None:
    assert gemini_tokens(384, 384) == 258
    assert gemini_tokens(1000, 700) == 2 * 1 * 258


def test_unknown_image_rule_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="image rule 'magic'"):
        image_tokens({"rule": "magic"}, 512, 512)


# --- the reference study's cost table, 2024-08-16 prices -------------------------------------


def image_usd(model_id: str, provider: str = "openai") -> float:
    price = price_for(sheet("2024-08-16"), model(model_id, provider))
    return image_tokens(price.image_rule, 512, 512, "low") * price.input / 1e6


def test_gpt4o_low_detail_image_costs_425_micro_dollars() -> None:
    assert image_usd("gpt-4o-2024-05-13") == pytest.approx(0.000425)


def test_gpt4o_mini_image_costs_about_the_same() -> None:
    price = price_for(sheet("2024-08-16"), model("gpt-4o-mini-2024-07-18"))
    assert image_tokens(price.image_rule, 512, 512, "low") == 2833
    assert image_usd("gpt-4o-mini-2024-07-18") == pytest.approx(0.00042495)


def test_claude_image_costs_per_million() -> None:
    # 350 whole tokens per 512-px image; the study priced the unrounded 349.525 ($1,048.58
    # and $87.38 per million images).
    assert image_usd("claude-3-5-sonnet-20240620", "anthropic") * 1e6 == pytest.approx(1050.0)
    assert image_usd("claude-3-haiku-20240307", "anthropic") * 1e6 == pytest.approx(87.5)


@pytest.mark.parametrize(
    ("model_id", "provider", "text_tokens", "expected", "printed"),
    [
        # The study prints $9,095: it charged GPT-4V's image at GPT-4o's $425 per million
        # images, but at GPT-4V's $10 per million tokens 85 image tokens cost $850.
        ("gpt-4-vision-preview", "openai", 867, 9520.0, 9095.0),
        # The study prints $4,865, which is 888 text tokens; 889 × $5 + $425 = $4,870.
        ("gpt-4o-2024-05-13", "openai", 889, 4870.0, 4865.0),
        # The study prints $3,400.58 from 349.525 image tokens; billed whole, 350 + 784 tokens
        # at $3 per million cost $3,402.
        ("claude-3-5-sonnet-20240620", "anthropic", 784, 3402.0, 3400.58),
    ],
)
def test_million_multimodal_judgments_input_cost(
    model_id: str, provider: str, text_tokens: int, expected: float, printed: float
) -> None:
    price = price_for(sheet("2024-08-16"), model(model_id, provider))
    image = image_tokens(price.image_rule, 512, 512, "low")
    per_judgment = (text_tokens + image) * price.input / 1e6
    assert per_judgment * 1e6 == pytest.approx(expected, abs=0.01)
    if expected != printed:
        assert abs(per_judgment * 1e6 - printed) >= 1


# --- accounting by usage bucket -------------------------------------------------------------


def test_openai_cached_input_is_priced_inside_prompt_tokens() -> None:
    price = price_for(sheet("2026-10-31"), model("gpt-4.1-2025-04-14"))
    usage = Usage(input_tokens=2000, cached_input_tokens=1024, output_tokens=100)
    expected = (976 * 2.0 + 1024 * 0.5 + 100 * 8.0) / 1e6
    assert cost_of(usage, price).total_usd == pytest.approx(expected)


def test_anthropic_cache_buckets_are_disjoint_prices() -> None:
    price = price_for(sheet("2026-10-31"), model("claude-sonnet-4-5-20250929", "anthropic"))
    usage = Usage(input_tokens=50 + 1000 + 2000, cache_write_tokens=1000, cached_input_tokens=2000)
    usage.output_tokens = 20
    expected = (50 * 3.0 + 1000 * 3.75 + 2000 * 0.30 + 20 * 15.0) / 1e6
    assert cost_of(usage, price).total_usd == pytest.approx(expected)


def test_image_tokens_are_never_added_on_top() -> None:
    price = price_for(sheet("2024-08-16"), model("gpt-4o-2024-05-13"))
    with_images = Usage(input_tokens=974, image_tokens=85, output_tokens=10)
    without = Usage(input_tokens=974, output_tokens=10)
    assert cost_of(with_images, price).total_usd == cost_of(without, price).total_usd
    assert cost_of(with_images, price).image_usd == pytest.approx(85 * 5 / 1e6)


def test_batch_calls_are_half_price() -> None:
    price = price_for(sheet("2024-08-16"), model("gpt-4o-2024-05-13"))
    usage = Usage(input_tokens=1000, output_tokens=100)
    full = cost_of(usage, price).total_usd
    assert cost_of(usage, price, batch=True).total_usd == pytest.approx(full / 2)


def test_local_judges_are_free_and_unknown_models_fail_early() -> None:
    assert price_for(sheet("2024-08-16"), model("lexical-bm25", "lexical")).input == 0.0
    with pytest.raises(ConfigError, match=r"gpt-9.*2024-08-16 sheet.*pricing="):
        price_for(sheet("2024-08-16"), model("gpt-9"))


# --- one image count in every place that estimates one ---------------------------------------


def test_forecast_records_and_reprice_count_claude_images_alike(tmp_path) -> None:
    """A 512-px image is 350 tokens for Claude 3.x in the ledger, the dry-run forecast, the
    estimate written on records and ``reprice --as-model``; two images are 700."""
    import json

    from mmjudge.costs.calls import CallPricer
    from mmjudge.costs.forecast import forecast_call
    from mmjudge.costs.reprice import reprice_run
    from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse, Usage

    claude = ModelConfig(
        name="claude35_sonnet",
        provider="anthropic",
        model_id="claude-3-5-sonnet-20240620",
    )
    price = price_for(sheet("2024-08-16"), claude)
    image = EncodedImage("a.png", "0" * 64, "image/png", 512, 512, "")
    assert image_tokens(price.image_rule, 512, 512) == 350

    request = JudgeRequest(item_key="k", prompt="grade it", images=(image, image))
    assert forecast_call(request, claude, price, 10).image_tokens == 700

    answer = JudgeResponse(text="1", usage=Usage(input_tokens=900, output_tokens=5))
    assert CallPricer(price, claude)(request, answer).usage.image_tokens == 700

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    usage = {"input_tokens": 1000, "output_tokens": 5, "image_tokens": 170}
    row = {"query_id": "q", "result_id": "r", "usage": usage, "image_sha256s": ["a", "b"]}
    (run_dir / "judgments.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    model = {"name": "gpt4o", "provider": "openai", "model_id": "gpt-4o-2024-05-13"}
    summary = {"pricing_sheet": "2024-08-16", "config": {"model": model, "images": {}}}
    (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    repriced = reprice_run(run_dir, "2024-08-16", as_model="claude-3-5-sonnet-20240620")
    assert repriced.basis.image_tokens_per_image == 350
    assert repriced.basis.tokens.image_tokens == 700
