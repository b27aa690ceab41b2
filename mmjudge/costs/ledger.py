"""The cost ledger: what one usage record costs under a model's prices.

A pure function of usage and prices (:mod:`mmjudge.costs.sheets`), so a finished run can be
re-priced under any sheet without calling a provider. The batch discount is applied here and
nowhere else (:func:`batch_factor`).
"""

from __future__ import annotations

from typing import NamedTuple

from mmjudge.costs.sheets import PER_MILLION, ModelPrice
from mmjudge.records import Usage


class Cost(NamedTuple):
    total_usd: float
    image_usd: float


def cost_of(
    usage: Usage, price: ModelPrice, *, batch: bool = False, sheet_batch_discount: float = 0.5
) -> Cost:
    """Dollars for one usage record, bucket by bucket.

    ``usage.input_tokens`` already includes cached, cache-write and image tokens (providers
    count images inside input), so nothing is added on top; the image share is reported
    separately for the report's split of fixed and variable costs. Cache writes made for an
    hour (``cache_write_1h_tokens``) take the ``cache_write_1h`` price, the rest
    ``cache_write``. A call whose input passes a long-context tier's threshold is billed
    entirely at that tier's prices. A price per judgment (a free judge's own) is charged once,
    one usage record being one call, and no batch API discounts it.
    """
    price = price.at(usage.input_tokens)
    cached = usage.cached_input_tokens
    written = usage.cache_write_tokens
    written_1h = min(usage.cache_write_1h_tokens, written)
    plain = max(usage.input_tokens - cached - written, 0)
    cached_price = _first(price.cache_read, price.cached_input, price.input)
    write_price = _first(price.cache_write, price.input)
    write_1h_price = _first(price.cache_write_1h, price.cache_write, price.input)
    total = (
        plain * price.input
        + cached * cached_price
        + (written - written_1h) * write_price
        + written_1h * write_1h_price
        + usage.output_tokens * price.output
    ) / PER_MILLION
    image = min(usage.image_tokens, usage.input_tokens) * price.input / PER_MILLION
    if batch:
        factor = batch_factor(price, sheet_batch_discount)
        total *= factor
        image *= factor
    return Cost(total + price.per_judgment / PER_MILLION, image)


def batch_factor(price: ModelPrice, sheet_batch_discount: float) -> float:
    """The fraction of the list price paid through a batch API: the model's own
    ``batch_discount`` when its sheet entry gives one, else the sheet's."""
    return price.batch_discount if price.batch_discount is not None else sheet_batch_discount


def _first(*values: float | None) -> float:
    for value in values:
        if value is not None:
            return float(value)
    return 0.0
