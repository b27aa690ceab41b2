"""Mean absolute error by hand: lower is better, at most the scale's width."""

from __future__ import annotations

import math

import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import ScoringScale

MEASURE = catalogue.measure("mae")


def test_declared_lower_is_better() -> None:
    assert not MEASURE.higher_is_better and MEASURE.direction == "lower is better"
    assert (MEASURE.low, MEASURE.high, MEASURE.label) == (0.0, math.inf, "MAE")


def test_value_by_hand() -> None:
    # grades apart: 0, 1, 2, 0 → 3/4
    gap = MEASURE.statistic(ScoringScale((0.0, 1.0, 2.0, 3.0), 2.0))
    assert gap([0, 1, 2, 3], [0, 2, 0, 3]) == pytest.approx(0.75)
