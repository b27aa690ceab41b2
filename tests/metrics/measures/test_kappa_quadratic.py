"""κ with quadratic weights, worked out by hand on three items."""

from __future__ import annotations

import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import ScoringScale

MEASURE = catalogue.measure("kappa_quadratic")


def test_declaration() -> None:
    assert (MEASURE.label, MEASURE.header) == ("κ quadratic", "kappa_quad")
    assert MEASURE.interval and MEASURE.higher_is_better and MEASURE.chance == 0.0


def test_value_by_hand() -> None:
    # scale 0–2, weights (|i − j| / 2)²; reference 0 1 2, judge 0 2 2.
    # observed: (1/3)(1/4) = 1/12; expected: (1/3)[(1/3)(0 + 1 + 4)/4 + (2/3)(4 + 1 + 0)/4]
    # = 5/12; κ = 1 − (1/12)/(5/12) = 4/5 (the same near miss costs less than linearly: 2/3)
    kappa = MEASURE.statistic(ScoringScale((0.0, 1.0, 2.0), 1.0))
    assert kappa([0, 1, 2], [0, 2, 2]) == pytest.approx(0.8)
