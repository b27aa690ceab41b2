"""Accuracy by hand: the share of items graded the same, items without both grades left out."""

from __future__ import annotations

import math

import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import ScoringScale

MEASURE = catalogue.measure("accuracy")


def test_declaration() -> None:
    assert (MEASURE.low, MEASURE.high) == (0.0, 1.0) and MEASURE.higher_is_better
    assert MEASURE.chance is None  # a constant judge scores its grade's share


def test_value_by_hand() -> None:
    same = MEASURE.statistic(ScoringScale((0.0, 1.0, 2.0, 3.0), 2.0))
    assert same([0, 1, 2, 3], [0, 1, 3, math.nan]) == pytest.approx(2 / 3)
