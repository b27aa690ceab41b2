"""The cost ledger: price sheets, image-token rules and the cost of a usage record.

Everything here is a pure function of usage and a price sheet, so a finished run can be
re-priced under any sheet without calling a provider.

A sheet entry prices a model in one of two ways:

* **per token**, as the provider lists it: ``input`` and ``output`` in USD per million tokens,
  with optional cache prices and optional long-context ``tiers``;
* **per GPU-hour**, for a self-hosted judge: ``gpu_hour``, ``gpus`` and a throughput, turned
  into an effective price per million tokens by :func:`gpu_hour_price`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from omegaconf import DictConfig, ListConfig, OmegaConf

from mmjudge.config import ModelConfig, PricingConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.registry import is_free
from mmjudge.records import Usage

PER_MILLION = 1_000_000
SECONDS_PER_HOUR = 3600

#: Per-token price fields of a sheet entry (USD per million tokens, except the discount).
PRICE_FIELDS = ("input", "output", "cached_input", "cache_write", "cache_read", "batch_discount")
#: Fields of a self-hosted entry, priced per GPU-hour.
SELF_HOSTED_FIELDS = (
    "gpu_hour",
    "gpus",
    "throughput_tokens_per_s",
    "input_tokens_per_s",
    "output_tokens_per_s",
    "utilization",
)
#: Fields a long-context tier may set.
TIER_FIELDS = ("above_input_tokens", "input", "output", "cached_input", "cache_write", "cache_read")
ENTRY_FIELDS = (*PRICE_FIELDS, *SELF_HOSTED_FIELDS, "tiers", "image_rule", "note")


@dataclass(frozen=True)
class PriceTier:
    """Prices that replace the base prices for a whole call once its input is long enough.

    Providers bill long prompts on a cliff: a call whose input passes the threshold pays the
    tier's prices for *all* its tokens, output included, not only for the tokens past it.
    """

    above_input_tokens: int
    """The tier applies when the call's ``input_tokens`` (cached and image tokens included)
    is strictly greater than this."""
    input: float
    """USD per million input tokens in this tier."""
    output: float
    """USD per million output tokens in this tier."""
    cached_input: float | None = None
    """Cached input price in this tier; when None, the base price scaled like ``input``."""
    cache_write: float | None = None
    """Cache write price in this tier; when None, the base price scaled like ``input``."""
    cache_read: float | None = None
    """Cache read price in this tier; when None, the base price scaled like ``input``."""


@dataclass(frozen=True)
class SelfHosted:
    """A judge served on rented GPUs: what the hardware costs and how fast it goes.

    The figures are the user's assumptions (an hourly rental price and a measured
    throughput), not a provider's list price; see :func:`gpu_hour_price`.
    """

    gpu_hour: float
    """USD per GPU per hour."""
    input_tokens_per_s: float
    """Input tokens the whole deployment processes per second under a judging workload."""
    output_tokens_per_s: float
    """Output tokens the whole deployment produces per second under a judging workload."""
    gpus: int = 1
    """GPUs the deployment occupies (every GPU of a tensor-parallel group counts)."""
    utilization: float = 1.0
    """Fraction of the rented hours spent serving judgments (idle time is paid for too)."""

    @property
    def input_price(self) -> float:
        """Effective USD per million input tokens."""
        return gpu_hour_price(self.gpu_hour, self.gpus, self.input_tokens_per_s, self.utilization)

    @property
    def output_price(self) -> float:
        """Effective USD per million output tokens."""
        return gpu_hour_price(self.gpu_hour, self.gpus, self.output_tokens_per_s, self.utilization)


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
    tiers: tuple[PriceTier, ...] = ()
    """Long-context tiers, by increasing threshold (see :meth:`at`)."""
    self_hosted: SelfHosted | None = None
    """The GPU-hour assumptions ``input`` and ``output`` were derived from, if any."""

    def at(self, input_tokens: int) -> ModelPrice:
        """The prices in force for one call with this many input tokens.

        The highest tier whose threshold the call passes replaces ``input`` and ``output``;
        cache prices the tier leaves out are the base ones scaled by the tier's input price
        over the base input price (providers set cache prices as fixed fractions of input).
        """
        tier = None
        for candidate in self.tiers:
            if input_tokens > candidate.above_input_tokens:
                tier = candidate
        if tier is None:
            return self
        ratio = tier.input / self.input if self.input else 1.0

        def scaled(own: float | None, base: float | None) -> float | None:
            if own is not None:
                return own
            return None if base is None else base * ratio

        return dataclasses.replace(
            self,
            input=tier.input,
            output=tier.output,
            cached_input=scaled(tier.cached_input, self.cached_input),
            cache_write=scaled(tier.cache_write, self.cache_write),
            cache_read=scaled(tier.cache_read, self.cache_read),
            tiers=(),
        )


FREE = ModelPrice(input=0.0, output=0.0)


class Cost(NamedTuple):
    total_usd: float
    image_usd: float


def gpu_hour_price(
    gpu_hour: float, gpus: int, tokens_per_s: float, utilization: float = 1.0
) -> float:
    """Effective USD per million tokens of a self-hosted judge.

    ``gpu_hour × gpus`` dollars buy one hour, in which the deployment handles
    ``tokens_per_s × 3600 × utilization`` tokens, so::

        USD per million tokens = gpu_hour × gpus / (3600 × tokens_per_s × utilization) × 10⁶

    For example one GPU at $2.50 an hour sustaining 2,500 tokens/s costs
    2.50 / 9,000,000 × 10⁶ ≈ $0.278 per million tokens.

    A sheet entry either gives one ``throughput_tokens_per_s`` — total (input + output)
    tokens per second measured on a judge-like workload, so every token costs the same and
    a call pays for its share of GPU time — or ``input_tokens_per_s`` and
    ``output_tokens_per_s`` measured *separately* (prefill-only and decode-only runs), so a
    call costs ``input / input_tokens_per_s + output / output_tokens_per_s`` seconds of the
    deployment. Do not take both from one mixed run: its GPU time would be counted twice.
    """
    if gpu_hour < 0 or gpus < 1 or tokens_per_s <= 0 or not 0 < utilization <= 1:
        raise ValueError(
            "gpu_hour must be >= 0, gpus >= 1, the throughput > 0 and utilization in (0, 1]"
        )
    return gpu_hour * gpus / (SECONDS_PER_HOUR * tokens_per_s * utilization) * PER_MILLION


def price_for(sheet: PricingConfig, model: ModelConfig) -> ModelPrice:
    """The model's prices in the sheet; a judge that says it is free (a local one) and is not
    in the sheet costs nothing. Fails before any call. (The sheet is read first, so pricing a
    provider's model never imports its SDK.)"""
    key = model.price_key or model.model_id
    entry = sheet.models.get(key)
    if entry is None and is_free(model):
        return FREE
    if entry is None:
        raise ConfigError(
            f"model '{model.name}' ({key}) has no price in the {sheet.date} sheet; add it to "
            f"conf/pricing/{sheet.date}.yaml, set model.price_key, or pick another pricing=<sheet>"
        )
    return price_from_entry(key, entry, sheet.date)


def price_from_entry(key: str, entry: Any, sheet_date: str = "?") -> ModelPrice:
    """Build a :class:`ModelPrice` from one sheet entry, checking every field.

    An entry gives either ``input`` and ``output`` prices or ``gpu_hour`` with a throughput;
    a self-hosted entry has ``input_tokens_per_s`` and ``output_tokens_per_s`` default to
    ``throughput_tokens_per_s`` and pays the full price in batch mode (``batch_discount`` 1.0)
    unless the entry says otherwise.
    """
    where = f"pricing {sheet_date}: model '{key}'"
    values = _plain(entry)
    if not isinstance(values, dict):
        raise ConfigError(f"{where} must be a mapping of prices, not {values!r}")
    unknown = set(values) - set(ENTRY_FIELDS)
    if unknown:
        raise ConfigError(
            f"{where} has unknown fields {sorted(unknown)}; allowed: {sorted(ENTRY_FIELDS)}"
        )
    image_rule = dict(values.get("image_rule") or {})
    tiers = _tiers(values.get("tiers"), where)
    batch_discount = _number(values, "batch_discount", where)
    if values.get("gpu_hour") is not None:
        listed = [name for name in ("input", "output", "cached_input") if name in values]
        if listed:
            raise ConfigError(
                f"{where} gives both gpu_hour and per-token prices {listed}; use one or the other"
            )
        hosted = _self_hosted(values, where)
        return ModelPrice(
            input=hosted.input_price,
            output=hosted.output_price,
            batch_discount=1.0 if batch_discount is None else batch_discount,
            image_rule=image_rule,
            tiers=tiers,
            self_hosted=hosted,
        )
    extra = [name for name in SELF_HOSTED_FIELDS if name in values]
    if extra:
        raise ConfigError(f"{where} sets {extra} without gpu_hour")
    price_in = _number(values, "input", where)
    price_out = _number(values, "output", where)
    if price_in is None or price_out is None:
        raise ConfigError(
            f"{where} needs input and output (USD per million tokens), or gpu_hour and "
            "throughput_tokens_per_s for a self-hosted judge"
        )
    return ModelPrice(
        input=price_in,
        output=price_out,
        cached_input=_number(values, "cached_input", where),
        cache_write=_number(values, "cache_write", where),
        cache_read=_number(values, "cache_read", where),
        batch_discount=batch_discount,
        image_rule=image_rule,
        tiers=tiers,
    )


def _plain(value: Any) -> Any:
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _number(values: Mapping[str, Any], name: str, where: str) -> float | None:
    value = values.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: {name} must be a number, not {value!r}")
    if value < 0:
        raise ConfigError(f"{where}: {name} must not be negative ({value})")
    return float(value)


def _self_hosted(values: Mapping[str, Any], where: str) -> SelfHosted:
    shared = _number(values, "throughput_tokens_per_s", where)
    per_input = _number(values, "input_tokens_per_s", where) or shared
    per_output = _number(values, "output_tokens_per_s", where) or shared
    if not per_input or not per_output:
        raise ConfigError(
            f"{where} needs throughput_tokens_per_s (or both input_tokens_per_s and "
            "output_tokens_per_s) greater than 0 to turn gpu_hour into a price per token"
        )
    gpus = values.get("gpus", 1)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ConfigError(f"{where}: gpus must be a whole number >= 1, not {gpus!r}")
    utilization = _number(values, "utilization", where)
    utilization = 1.0 if utilization is None else utilization
    if not 0 < utilization <= 1:
        raise ConfigError(f"{where}: utilization must be in (0, 1], not {utilization}")
    gpu_hour = _number(values, "gpu_hour", where)
    assert gpu_hour is not None
    return SelfHosted(
        gpu_hour=gpu_hour,
        gpus=gpus,
        input_tokens_per_s=per_input,
        output_tokens_per_s=per_output,
        utilization=utilization,
    )


def _tiers(raw: Any, where: str) -> tuple[PriceTier, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: tiers must be a list of {{above_input_tokens, input, ...}}")
    tiers = []
    for item in raw:
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: each tier must be a mapping, not {item!r}")
        unknown = set(item) - set(TIER_FIELDS)
        if unknown:
            raise ConfigError(
                f"{where}: a tier has unknown fields {sorted(unknown)}; allowed: "
                f"{sorted(TIER_FIELDS)}"
            )
        threshold = item.get("above_input_tokens")
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise ConfigError(
                f"{where}: each tier needs above_input_tokens, a whole number of tokens"
            )
        price_in = _number(item, "input", where)
        price_out = _number(item, "output", where)
        if price_in is None or price_out is None:
            raise ConfigError(f"{where}: the tier above {threshold} tokens needs input and output")
        tiers.append(
            PriceTier(
                above_input_tokens=threshold,
                input=price_in,
                output=price_out,
                cached_input=_number(item, "cached_input", where),
                cache_write=_number(item, "cache_write", where),
                cache_read=_number(item, "cache_read", where),
            )
        )
    thresholds = [tier.above_input_tokens for tier in tiers]
    if len(set(thresholds)) != len(thresholds):
        raise ConfigError(f"{where}: two tiers share the threshold {thresholds}")
    return tuple(sorted(tiers, key=lambda tier: tier.above_input_tokens))


def cost_of(
    usage: Usage, price: ModelPrice, *, batch: bool = False, sheet_batch_discount: float = 0.5
) -> Cost:
    """Dollars for one usage record, bucket by bucket.

    ``usage.input_tokens`` already includes cached, cache-write and image tokens (providers
    count images inside input), so nothing is added on top; the image share is reported
    separately for the report's split of fixed and variable costs. A call whose input passes
    a long-context tier's threshold is billed entirely at that tier's prices.
    """
    price = price.at(usage.input_tokens)
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
        factor = batch_factor(price, sheet_batch_discount)
        total *= factor
        image *= factor
    return Cost(total, image)


def batch_factor(price: ModelPrice, sheet_batch_discount: float) -> float:
    """The fraction of the list price paid through a batch API: the model's own
    ``batch_discount`` when its sheet entry gives one, else the sheet's."""
    return price.batch_discount if price.batch_discount is not None else sheet_batch_discount


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
) -> int:
    """Anthropic's 2024 rule: ⌈width × height / 750⌉ whole tokens per image.

    The provider documents ``tokens = (width px × height px) / 750`` and bills whole
    tokens; its own worked examples round up (200×200 → 54, 1000×1000 → 1,334,
    1092×1092 → 1,590), so a 512×512 image is 350 tokens, not 349.525. An image whose long
    edge passes ``max_edge`` or whose count passes ``max_tokens`` is first shrunk, keeping
    its aspect ratio, to whole pixels that fit both limits.
    """
    if width <= 0 or height <= 0:
        return 0
    scale = min(1.0, max_edge / max(width, height))
    if width * height * scale * scale / 750 > max_tokens:
        scale *= math.sqrt(max_tokens * 750 / (width * height * scale * scale))
    if scale < 1.0:
        width, height = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    return -(-width * height // 750)


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


def image_tokens(rule: dict[str, Any], width: int, height: int, detail: str = "low") -> int:
    """Estimated input tokens for one image under a sheet's image rule, in whole tokens.

    This is the one estimate used everywhere an image's tokens are not reported by the
    provider: the dry-run forecast, the records' image share, and ``reprice --as-model``.
    Several images cost the sum of their own counts. A rule whose formula gives a fraction
    (the patch multipliers) is rounded up, as providers bill whole tokens.
    """
    return math.ceil(_image_tokens(rule, width, height, detail) - 1e-9)


def _image_tokens(rule: dict[str, Any], width: int, height: int, detail: str) -> float:
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
        return float(anthropic_2024_tokens(width, height))
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
