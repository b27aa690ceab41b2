"""The cost ledger: price sheets, image-token rules and the cost of a usage record.

Everything here is a pure function of usage and a price sheet, so a finished run can be
re-priced under any sheet without calling a provider.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from mmjudge.config import ModelConfig, PricingConfig
from mmjudge.errors import ConfigError
from mmjudge.records import Usage

LOCAL_PROVIDERS = frozenset({"lexical", "embedding"})
PER_MILLION = 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens for one model under one sheet."""

    input: float
    output: float
    cached_input: float | None = None
    """OpenAI-style cached input (a discount on tokens inside ``input_tokens``)."""
    cache_write: float | None = None
    """Anthropic-style cache write (5-minute)."""
    cache_read: float | None = None
    """Anthropic-style cache read."""
    batch_discount: float | None = None
    """Fraction of the price paid in batch mode; the sheet's default when None."""
    image_rule: dict[str, Any] = field(default_factory=dict)
    """How images turn into tokens (see :func:`image_tokens`)."""


FREE = ModelPrice(input=0.0, output=0.0)


class Cost(NamedTuple):
    total_usd: float
    image_usd: float


def price_for(sheet: PricingConfig, model: ModelConfig) -> ModelPrice:
    """The model's prices in the sheet; local judges are free. Fails before any call."""
    if model.provider in LOCAL_PROVIDERS:
        return FREE
    key = model.price_key or model.model_id
    entry = sheet.models.get(key)
    if entry is None:
        raise ConfigError(
            f"model '{model.name}' ({key}) has no price in the {sheet.date} sheet; add it to "
            f"conf/pricing/{sheet.date}.yaml, set model.price_key, or pick another pricing=<sheet>"
        )
    known = {f for f in ModelPrice.__dataclass_fields__}
    unknown = set(entry) - known - {"note"}
    if unknown:
        raise ConfigError(
            f"pricing {sheet.date}: model '{key}' has unknown fields {sorted(unknown)}; "
            f"allowed: {sorted(known)}"
        )
    values = {k: v for k, v in dict(entry).items() if k in known}
    values["image_rule"] = dict(values.get("image_rule") or {})
    return ModelPrice(**values)


def cost_of(
    usage: Usage, price: ModelPrice, *, batch: bool = False, sheet_batch_discount: float = 0.5
) -> Cost:
    """Dollars for one usage record, bucket by bucket.

    ``usage.input_tokens`` already includes cached, cache-write and image tokens (providers
    count images inside input), so nothing is added on top; the image share is reported
    separately for the report's split of fixed and variable costs.
    """
    cached = usage.cached_input_tokens
    written = usage.cache_write_tokens
    plain = max(usage.input_tokens - cached - written, 0)
    cached_price = _first(price.cache_read, price.cached_input, price.input)
    write_price = _first(price.cache_write, price.input)
    total = (
        plain * price.input
        + cached * cached_price
        + written * write_price
        + usage.output_tokens * price.output
    ) / PER_MILLION
    image = min(usage.image_tokens, usage.input_tokens) * price.input / PER_MILLION
    if batch:
        factor = price.batch_discount if price.batch_discount is not None else sheet_batch_discount
        total *= factor
        image *= factor
    return Cost(total, image)


def _first(*values: float | None) -> float:
    for value in values:
        if value is not None:
            return float(value)
    return 0.0


# --- image-token rules -------------------------------------------------------------------


def openai_tile_tokens(width: int, height: int, detail: str, base: int, tile: int) -> int:
    """OpenAI's tile rule: a fixed base at low detail; at high detail, fit in 2048², scale the
    short side to 768, and pay per 512-px tile on top of the base."""
    if detail == "low":
        return base
    if width <= 0 or height <= 0:
        return base
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = 768 / min(w, h)
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return base + tile * tiles


def anthropic_2024_tokens(
    width: int, height: int, max_edge: int = 1568, max_tokens: int = 1600
) -> float:
    """Anthropic's 2024 rule: width × height / 750, after downscaling over-large images."""
    scale = min(1.0, max_edge / max(width, height))
    w, h = width * scale, height * scale
    if w * h / 750 > max_tokens:
        factor = math.sqrt(max_tokens * 750 / (w * h))
        w, h = w * factor, h * factor
    return w * h / 750


def openai_patch_tokens(
    width: int, height: int, patch: int, budget: int, multiplier: float
) -> float:
    """OpenAI's patch rule: 32-px patches, shrunk to fit the patch budget, times the model's
    multiplier."""
    patches = math.ceil(width / patch) * math.ceil(height / patch)
    if patches > budget:
        shrink = math.sqrt(patch * patch * budget / (width * height))
        w_cols = width * shrink / patch
        h_rows = height * shrink / patch
        adjusted = shrink * min(math.floor(w_cols) / w_cols, math.floor(h_rows) / h_rows)
        patches = min(
            math.ceil(width * adjusted / patch) * math.ceil(height * adjusted / patch), budget
        )
    return patches * multiplier


def anthropic_patch_tokens(
    width: int, height: int, patch: int = 28, max_edge: int = 1568, max_tokens: int = 1568
) -> int:
    """Anthropic's current rule: 28-px patches, after shrinking to the largest aspect-preserving
    size whose padded edges and patch count fit the tier's limits."""

    def cost(w: int, h: int) -> tuple[int, int]:
        cols, rows = math.ceil(w / patch), math.ceil(h / patch)
        return max(cols, rows) * patch, cols * rows

    edge, tokens = cost(width, height)
    if edge <= max_edge and tokens <= max_tokens:
        return tokens
    low, high = 1, width
    while low < high:
        mid = (low + high + 1) // 2
        mid_h = max(1, round(mid * height / width))
        mid_edge, mid_tokens = cost(mid, mid_h)
        if mid_edge <= max_edge and mid_tokens <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return cost(low, max(1, round(low * height / width)))[1]


def gemini_tokens(
    width: int, height: int, per_tile: int = 258, small: int = 384, tile: int = 768
) -> int:
    """Gemini 2.x: a small image is one 258-token unit; a larger one is cut into 768-px tiles."""
    if width <= small and height <= small:
        return per_tile
    return math.ceil(width / tile) * math.ceil(height / tile) * per_tile


def image_tokens(rule: dict[str, Any], width: int, height: int, detail: str = "low") -> float:
    """Estimated input tokens for one image under a sheet's image rule."""
    kind = rule.get("rule")
    if not kind:
        return 0.0
    if kind == "openai_tile":
        return float(
            openai_tile_tokens(width, height, detail, int(rule["base"]), int(rule["tile"]))
        )
    if kind == "openai_patch":
        return openai_patch_tokens(
            width,
            height,
            int(rule.get("patch", 32)),
            int(rule.get("budget", 1536)),
            float(rule.get("multiplier", 1.0)),
        )
    if kind == "anthropic_2024":
        return anthropic_2024_tokens(width, height)
    if kind == "anthropic_patch":
        return float(
            anthropic_patch_tokens(
                width,
                height,
                int(rule.get("patch", 28)),
                int(rule.get("max_edge", 1568)),
                int(rule.get("max_tokens", 1568)),
            )
        )
    if kind == "gemini":
        return float(gemini_tokens(width, height, int(rule.get("tokens", 258))))
    if kind == "fixed":
        return float(rule["tokens"])
    raise ConfigError(
        f"image rule '{kind}' is unknown; use openai_tile, openai_patch, anthropic_2024, "
        "anthropic_patch, gemini or fixed"
    )
