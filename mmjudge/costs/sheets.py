"""Price sheets: a model's prices under one dated sheet (the ``pricing`` config group).

A sheet entry prices a model in one of two ways:

* **per token**, as the provider lists it: ``input`` and ``output`` in USD per million tokens,
  with optional cache prices and optional long-context ``tiers``;
* **per GPU-hour**, for a self-hosted judge: ``gpu_hour``, ``gpus`` and a throughput, turned
  into an effective price per million tokens by :func:`gpu_hour_price` — or, for a local judge
  that reads no tokens (a trained one), per million judgments from ``judgments_per_s``.

A judge that says it is free (:attr:`mmjudge.judges.descriptor.JudgeDescriptor.free`) needs
no entry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from mmjudge.config import ModelConfig, PricingConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.registry import is_free, usd_per_million_judgments

PER_MILLION = 1_000_000
SECONDS_PER_HOUR = 3600

#: Per-token price fields of a sheet entry (USD per million tokens, except the discount).
PRICE_FIELDS = (
    "input",
    "output",
    "cached_input",
    "cache_write",
    "cache_write_1h",
    "cache_read",
    "batch_discount",
)
#: Fields of a self-hosted entry, priced per GPU-hour.
SELF_HOSTED_FIELDS = (
    "gpu_hour",
    "gpus",
    "throughput_tokens_per_s",
    "input_tokens_per_s",
    "output_tokens_per_s",
    "utilization",
    "judgments_per_s",
)
#: A self-hosted entry's token throughputs (the others: ``judgments_per_s``).
TOKEN_THROUGHPUTS = ("throughput_tokens_per_s", "input_tokens_per_s", "output_tokens_per_s")
#: Fields a long-context tier may set.
TIER_FIELDS = (
    "above_input_tokens",
    "input",
    "output",
    "cached_input",
    "cache_write",
    "cache_write_1h",
    "cache_read",
)
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
    cache_write_1h: float | None = None
    """One-hour cache write price in this tier; when None, the base price scaled like
    ``input``."""
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
    cache_write_1h: float | None = None
    """Anthropic-style one-hour cache write (2x input on Anthropic's list); when None, such
    writes are billed at ``cache_write``."""
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
    per_judgment: float = 0.0
    """USD per million judgments, charged once per call beside the tokens: a free judge's
    own price from its config (:meth:`mmjudge.judges.base.JudgeAPI.usd_per_million_judgments`),
    or a self-hosted entry's ``gpu_hour`` over its ``judgments_per_s``."""

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
            cache_write_1h=scaled(tier.cache_write_1h, self.cache_write_1h),
            cache_read=scaled(tier.cache_read, self.cache_read),
            tiers=(),
        )


FREE = ModelPrice(input=0.0, output=0.0)


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
    in the sheet costs what its config charges per judgment, else nothing. Fails before any
    call. (The sheet is read first, so pricing a provider's model never imports its SDK.)"""
    key = model.price_key or model.model_id
    entry = sheet.models.get(key)
    if entry is None and is_free(model):
        own = usd_per_million_judgments(model)
        return ModelPrice(input=0.0, output=0.0, per_judgment=own) if own else FREE
    if entry is None:
        raise ConfigError(
            f"model '{model.name}' ({key}) has no price in the {sheet.date} sheet; price it in a "
            "sheet of your own (pricing/<name>.yaml in a --config-dir folder; mmjudge init "
            "writes one), set model.price_key, or pick another pricing=<sheet>"
        )
    return price_from_entry(key, entry, sheet.date)


def price_from_entry(key: str, entry: Any, sheet_date: str = "?") -> ModelPrice:
    """Build a :class:`ModelPrice` from one sheet entry, checking every field.

    An entry gives either ``input`` and ``output`` prices or ``gpu_hour`` with a throughput;
    a self-hosted entry has ``input_tokens_per_s`` and ``output_tokens_per_s`` default to
    ``throughput_tokens_per_s``. Batch calls take the entry's ``batch_discount``, else the
    sheet's, for a self-hosted entry as for any other (the shipped sheets give theirs 1.0).
    """
    where = f"pricing {sheet_date}: model '{key}'"
    values = _known_fields(
        _plain(entry), ENTRY_FIELDS, f"{where} must be a mapping of prices", f"{where} has"
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
        if values.get("judgments_per_s") is not None:
            return ModelPrice(
                input=0.0,
                output=0.0,
                batch_discount=batch_discount,
                per_judgment=_per_judgment(values, where),
            )
        hosted = _self_hosted(values, where)
        return ModelPrice(
            input=hosted.input_price,
            output=hosted.output_price,
            batch_discount=batch_discount,
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
        cache_write_1h=_number(values, "cache_write_1h", where),
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


def _deployment(values: Mapping[str, Any], where: str) -> tuple[float, int, float]:
    """A self-hosted entry's ``gpu_hour``, ``gpus`` and ``utilization``, checked."""
    gpus = values.get("gpus", 1)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ConfigError(f"{where}: gpus must be a whole number >= 1, not {gpus!r}")
    utilization = _number(values, "utilization", where)
    utilization = 1.0 if utilization is None else utilization
    if not 0 < utilization <= 1:
        raise ConfigError(f"{where}: utilization must be in (0, 1], not {utilization}")
    gpu_hour = _number(values, "gpu_hour", where)
    assert gpu_hour is not None
    return gpu_hour, gpus, utilization


def _per_judgment(values: Mapping[str, Any], where: str) -> float:
    """USD per million judgments of a self-hosted judge that reads no tokens (a trained local
    judge): the deployment's hour over the judgments it makes in one, by
    :func:`gpu_hour_price`'s formula with judgments in place of tokens."""
    tokens = [name for name in TOKEN_THROUGHPUTS if name in values]
    if tokens:
        raise ConfigError(
            f"{where} gives judgments_per_s and {tokens}; a judge that reads tokens is timed "
            "in tokens, one that reads none in judgments: keep one"
        )
    per_s = _number(values, "judgments_per_s", where)
    if not per_s:
        raise ConfigError(f"{where}: judgments_per_s must be greater than 0")
    gpu_hour, gpus, utilization = _deployment(values, where)
    return gpu_hour_price(gpu_hour, gpus, per_s, utilization)


def _self_hosted(values: Mapping[str, Any], where: str) -> SelfHosted:
    shared = _number(values, "throughput_tokens_per_s", where)
    per_input = _number(values, "input_tokens_per_s", where) or shared
    per_output = _number(values, "output_tokens_per_s", where) or shared
    if not per_input or not per_output:
        raise ConfigError(
            f"{where} needs throughput_tokens_per_s (or both input_tokens_per_s and "
            "output_tokens_per_s) greater than 0 to turn gpu_hour into a price per token"
        )
    gpu_hour, gpus, utilization = _deployment(values, where)
    return SelfHosted(
        gpu_hour=gpu_hour,
        gpus=gpus,
        input_tokens_per_s=per_input,
        output_tokens_per_s=per_output,
        utilization=utilization,
    )


def _known_fields(
    value: Any, allowed: Iterable[str], not_mapping: str, owner: str
) -> dict[str, Any]:
    """``value`` as a mapping whose every key is in ``allowed``; else a one-line error
    (``not_mapping``, or ``owner`` followed by the unknown fields and the allowed ones)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{not_mapping}, not {value!r}")
    unknown = set(value) - set(allowed)
    if unknown:
        raise ConfigError(
            f"{owner} unknown fields {sorted(unknown)}; allowed: {sorted(set(allowed))}"
        )
    return value


def _tiers(raw: Any, where: str) -> tuple[PriceTier, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: tiers must be a list of {{above_input_tokens, input, ...}}")
    tiers = []
    for raw_item in raw:
        item = _known_fields(
            raw_item, TIER_FIELDS, f"{where}: each tier must be a mapping", f"{where}: a tier has"
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
                cache_write_1h=_number(item, "cache_write_1h", where),
                cache_read=_number(item, "cache_read", where),
            )
        )
    thresholds = [tier.above_input_tokens for tier in tiers]
    if len(set(thresholds)) != len(thresholds):
        raise ConfigError(f"{where}: two tiers share the threshold {thresholds}")
    return tuple(sorted(tiers, key=lambda tier: tier.above_input_tokens))
