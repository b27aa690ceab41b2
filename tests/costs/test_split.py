"""A call's usage and dollars shared among its results (``prompt.passages_per_call``): by hand
for small cases, and the shares of many random calls add up to the call exactly."""

from __future__ import annotations

import dataclasses
import math
import random
from fractions import Fraction

import pytest

from mmjudge.costs.calls import PricedCall
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import ModelPrice
from mmjudge.costs.split import shares, shares_by, split_priced, split_usage, split_usd
from mmjudge.records import Usage

#: gpt-4o-mini's list prices a million tokens (and half of input for a cached token).
PRICE = ModelPrice(input=0.15, output=0.60, cached_input=0.075)


def test_largest_remainder_gives_the_leftover_to_the_first_places() -> None:
    assert shares(10, 3) == [4, 3, 3]
    assert shares(11, 3) == [4, 4, 3]
    assert shares(2, 5) == [1, 1, 0, 0, 0]
    assert shares(0, 4) == [0, 0, 0, 0]
    with pytest.raises(ValueError):
        shares(3, 0)


def test_shares_by_weight_give_the_leftover_to_the_largest_remainders() -> None:
    # 10 by 1:2:2 is 2, 4, 4 exactly; 11 is 2.2, 4.4, 4.4: the unit left goes to the first 4.4.
    assert shares_by(10, [1, 2, 2]) == [2, 4, 4]
    assert shares_by(11, [1, 2, 2]) == [2, 5, 4]
    assert shares_by(7, [0, 1, 0]) == [0, 7, 0]
    assert shares_by(5, [0, 0]) == [3, 2]  # no weight: equal shares
    assert shares_by(10, [1, 1, 1]) == shares(10, 3)


def test_the_input_follows_each_results_weight_and_the_output_is_equal() -> None:
    """The call said 300 characters once and showed listings of 100, 400 and 100 characters:
    weights 200, 500 and 200; 900 input tokens go 200, 500, 200, the cached 450 in proportion
    to them (100, 250, 100), the 30 output tokens 10 each."""
    usage = Usage(input_tokens=900, output_tokens=30, cached_input_tokens=450)
    parts = split_usage(usage, 3, [200.0, 500.0, 200.0])
    assert [p.input_tokens for p in parts] == [200, 500, 200]
    assert [p.cached_input_tokens for p in parts] == [100, 250, 100]
    assert [p.output_tokens for p in parts] == [10, 10, 10]
    with pytest.raises(ValueError):
        split_usage(usage, 2, [1.0, 2.0, 3.0])


def test_every_bucket_is_shared_and_no_part_exceeds_its_whole() -> None:
    usage = Usage(input_tokens=1003, output_tokens=61, cached_input_tokens=512, image_tokens=7)
    parts = split_usage(usage, 5)
    assert [p.input_tokens for p in parts] == [201, 201, 201, 200, 200]
    assert [p.output_tokens for p in parts] == [13, 12, 12, 12, 12]
    assert [p.cached_input_tokens for p in parts] == [103, 103, 102, 102, 102]
    assert [p.image_tokens for p in parts] == [2, 2, 1, 1, 1]
    assert sum(parts, Usage()) == usage
    for part in parts:
        assert part.cached_input_tokens <= part.input_tokens
        assert part.image_tokens <= part.input_tokens


def test_dollars_follow_the_weights_and_the_last_share_closes_the_sum() -> None:
    assert split_usd(1.0, [1, 1, 2]) == [0.25, 0.25, 0.5]
    assert sum(split_usd(0.1, [1, 1, 1])) == 0.1 and sum(split_usd(0.1, [1, 1, 1])[::-1]) == 0.1
    assert split_usd(0.3, [0, 0, 0]) == pytest.approx([0.1, 0.1, 0.1])
    assert math.fsum(split_usd(0.3, [0, 0, 0])) == 0.3


def test_a_call_of_five_is_shared_by_hand() -> None:
    # 1,003 input tokens (512 cached) and 61 output tokens at gpt-4o-mini's prices.
    usage = Usage(input_tokens=1003, output_tokens=61, cached_input_tokens=512)
    total = cost_of(usage, PRICE).total_usd
    parts = split_priced(PricedCall(usage, total, 0.0), 5, PRICE)
    # The first place: 201 input (103 cached, 98 plain) and 13 output tokens.
    first = (98 * 0.15 + 103 * 0.075 + 13 * 0.60) / 1e6
    weights = [cost_of(p.usage, PRICE).total_usd for p in parts]
    assert weights[0] == pytest.approx(first)
    assert parts[0].total_usd == pytest.approx(total * first / math.fsum(weights))
    assert math.fsum(p.total_usd for p in parts) == total
    assert sum((p.usage for p in parts), Usage()) == usage


def test_shares_of_random_calls_add_up_to_the_call_exactly() -> None:
    rng = random.Random(48)
    for _ in range(500):
        usage = Usage(
            input_tokens=(inp := rng.randint(0, 20_000)),
            output_tokens=rng.randint(0, 900),
            cached_input_tokens=rng.randint(0, inp),
            image_tokens=rng.randint(0, inp),
        )
        batch = rng.random() < 0.5
        total, image = cost_of(usage, PRICE, batch=batch)
        size = rng.randint(2, 10)
        weights = [rng.uniform(50, 2000) for _ in range(size)] if rng.random() < 0.5 else []
        parts = split_priced(PricedCall(usage, total, image), size, PRICE, weights)
        assert len(parts) == size
        assert sum((p.usage for p in parts), Usage()) == usage
        # The dollars add up exactly: as the floats are (fsum), and as a row total sums them.
        assert math.fsum(p.total_usd for p in parts) == total
        assert sum(Fraction(p.total_usd) for p in parts) == Fraction(total)
        assert math.fsum(p.image_usd for p in parts) == image
        assert all(p.total_usd >= 0 for p in parts)
        for p in parts:  # no part of a bucket exceeds its share of the bucket
            assert p.usage.cached_input_tokens <= p.usage.input_tokens
            assert p.usage.image_tokens <= p.usage.input_tokens


def test_a_free_call_shares_nothing() -> None:
    parts = split_priced(PricedCall(Usage(), 0.0, 0.0), 3, dataclasses.replace(PRICE))
    assert [p.total_usd for p in parts] == [0.0, 0.0, 0.0]
