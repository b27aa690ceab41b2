"""A run's dollars do not depend on the order its answers were recorded in."""

from __future__ import annotations

import math

import pandas as pd

from mmjudge.costs.run_dollars import cost_figures

# Twelve answers' prices whose plain float sum differs in the last digit between two orders.
COSTS = [0.00033, 0.0003, 0.000318, 0.000329, 0.000309, 0.000338]
COSTS += [0.000336, 0.000301, 0.000301, 0.000322, 0.000338, 0.000315]


def _rows(costs: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "cost_usd": costs,
            "image_cost_usd": [c / 3 for c in costs],
            "resent": [0] * len(costs),
            "cached": [False] * len(costs),
        }
    )


def test_the_same_rows_in_another_order_cost_exactly_the_same() -> None:
    backwards = list(reversed(COSTS))
    assert pd.Series(COSTS).sum() != pd.Series(backwards).sum()
    forward = cost_figures(_rows(COSTS))
    assert forward == cost_figures(_rows(backwards))
    assert forward.total_usd == forward.spent_usd == math.fsum(COSTS)
