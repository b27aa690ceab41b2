"""One call's usage and dollars shared among the results it judged
(``prompt.passages_per_call``), so that the rows of a call add up to exactly what it cost.

Tokens are whole, so each bucket is shared by largest remainder: every result gets the floor
of an equal share, and the tokens left over go one each to the first places in the call.
Since every bucket is shared by the same rule, a result's cached or image tokens never exceed
its input tokens. Dollars follow the tokens: each result's share is its tokens priced, scaled
so that the shares add up to the call's dollars exactly (:func:`split_usd`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from mmjudge.costs.calls import PricedCall
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import ModelPrice
from mmjudge.records import Usage


def shares(total: int, parts: int) -> list[int]:
    """``total`` whole units in ``parts`` shares by largest remainder: equal shares, the
    remainder one each to the first shares."""
    if parts < 1:
        raise ValueError(f"cannot share among {parts} parts")
    base, left = divmod(total, parts)
    return [base + (place < left) for place in range(parts)]


def split_usage(usage: Usage, parts: int) -> list[Usage]:
    """``usage`` shared bucket by bucket among ``parts`` results (see :func:`shares`)."""
    names = [f.name for f in dataclasses.fields(Usage)]
    split = {name: shares(getattr(usage, name), parts) for name in names}
    return [Usage(**{name: split[name][place] for name in names}) for place in range(parts)]


def split_usd(total: float, weights: Sequence[float]) -> list[float]:
    """``total`` dollars in shares proportional to ``weights`` (equal where they are all 0)
    that add up to ``total`` exactly, in any order.

    Every share is a whole number of ``total``'s last binary place (``math.ulp(total)``),
    rounded down, and the last share is what the others leave: sums of such multiples up to
    ``total`` are exact in floating point, so no order of adding the rows loses a bit."""
    parts = len(weights)
    weight = math.fsum(weights)
    if weight <= 0:
        weights, weight = [1.0] * parts, float(parts)
    if total <= 0 or not math.isfinite(total):
        return [total * w / weight for w in weights]
    unit = math.ulp(total)
    out = [math.floor(total * w / weight / unit) * unit for w in weights[:-1]]
    out.append(total - math.fsum(out))
    return out


def split_priced(priced: PricedCall, parts: int, price: ModelPrice) -> list[PricedCall]:
    """A priced call shared among its ``parts`` results: tokens by :func:`split_usage`,
    dollars (and their image part) by each share's tokens at the call's prices."""
    usages = split_usage(priced.usage, parts)
    tiered = price.at(priced.usage.input_tokens)  # the tier the whole call was billed at
    weights = [cost_of(usage, tiered).total_usd for usage in usages]
    image_weights = [float(usage.image_tokens) for usage in usages]
    totals = split_usd(priced.total_usd, weights)
    images = split_usd(priced.image_usd, image_weights)
    return [
        PricedCall(usage, usd, image_usd)
        for usage, usd, image_usd in zip(usages, totals, images, strict=True)
    ]
