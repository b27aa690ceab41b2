"""One call's usage and dollars shared among the results it judged
(``prompt.passages_per_call``), so that the rows of a call add up to exactly what it cost.

Each result's share of the input follows what it brought to the call: an equal part of what
the call says once (the instructions, the scale, the query, the answer's format) and its own
listing, both measured in characters of the call's prompt (the call's weights, made where the
prompt is: :func:`mmjudge.prompts.passages.call_weights`); without weights, equal shares. The
output is shared equally (one grade each). Tokens are whole, so each bucket is shared by
largest remainder (:func:`shares_by`): the floor of each exact share, the tokens left over one
each to the largest remainders. The parts of a bucket (cached, cache-written and image tokens
of the input; reasoning tokens of the output) are shared in proportion to the shares of the
bucket they are part of, so a result's cached or image tokens never exceed its input tokens.
Dollars follow the tokens: each result's share is its tokens priced, scaled so that the shares
add up to the call's dollars exactly (:func:`split_usd`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction

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


def shares_by(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` whole units in shares proportional to ``weights`` (equal where they are all
    0) by largest remainder: the floor of each exact share, the units left over one each to
    the largest remainders, the earlier place first among equal ones. Exact shares are
    reckoned in fractions, so no rounding moves a unit; a place of weight 0 gets none."""
    if not weights:
        raise ValueError("cannot share among 0 parts")
    exact = [Fraction(w) for w in weights]
    whole = sum(exact, Fraction(0))
    if whole <= 0:
        return shares(total, len(weights))
    quotas = [total * w / whole for w in exact]
    out = [math.floor(q) for q in quotas]
    order = sorted(range(len(out)), key=lambda place: (out[place] - quotas[place], place))
    for place in order[: total - sum(out)]:
        out[place] += 1
    return out


#: The buckets of :class:`Usage` shared in proportion to another's shares: each is part of it.
_PARTS_OF = {
    "cached_input_tokens": "input_tokens",
    "cache_write_tokens": "input_tokens",
    "cache_write_1h_tokens": "cache_write_tokens",
    "image_tokens": "input_tokens",
    "reasoning_tokens": "output_tokens",
}


def split_usage(usage: Usage, parts: int, weights: Sequence[float] = ()) -> list[Usage]:
    """``usage`` shared among ``parts`` results: the input by ``weights`` (one per result;
    empty: equal), the output equally, each bucket's parts in proportion to its shares (see
    :func:`shares_by`)."""
    if weights and len(weights) != parts:
        raise ValueError(f"{len(weights)} weights for {parts} parts")
    split = {
        "input_tokens": shares_by(usage.input_tokens, weights or [1.0] * parts),
        "output_tokens": shares(usage.output_tokens, parts),
    }
    for name in ("cache_write_tokens", *_PARTS_OF):  # a bucket before the parts of it
        if name not in split:
            split[name] = shares_by(getattr(usage, name), split[_PARTS_OF[name]])
    names = [f.name for f in dataclasses.fields(Usage)]
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


def split_priced(
    priced: PricedCall, parts: int, price: ModelPrice, weights: Sequence[float] = ()
) -> list[PricedCall]:
    """A priced call shared among its ``parts`` results: tokens by :func:`split_usage` (the
    input by ``weights``; empty: equally), dollars (and their image part) by each share's
    tokens at the call's prices."""
    usages = split_usage(priced.usage, parts, weights)
    tiered = price.at(priced.usage.input_tokens)  # the tier the whole call was billed at
    weights = [cost_of(usage, tiered).total_usd for usage in usages]
    image_weights = [float(usage.image_tokens) for usage in usages]
    totals = split_usd(priced.total_usd, weights)
    images = split_usd(priced.image_usd, image_weights)
    return [
        PricedCall(usage, usd, image_usd)
        for usage, usd, image_usd in zip(usages, totals, images, strict=True)
    ]
