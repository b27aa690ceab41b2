"""κ with linear weights, worked out by hand on three items."""

from __future__ import annotations

import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import ScoringScale

MEASURE = catalogue.measure("kappa_linear")


def test_declaration() -> None:
    assert (MEASURE.label, MEASURE.header) == ("κ linear", "kappa_lin")
    assert (
        MEASURE.interval and MEASURE.higher_is_better and MEASURE.summary_keys() == ["kappa_linear"]
    )


def test_value_by_hand() -> None:
    # scale 0–2, weights |i − j| / 2; reference 0 1 2, judge 0 2 2.
    # observed: one item a grade apart, (1/3)(1/2) = 1/6;
    # expected: p_ref = (1/3, 1/3, 1/3), p_judge = (1/3, 0, 2/3), so Σ p_ref(i) p_judge(j) w(i, j)
    # = (1/3)[(1/3)(0 + 1 + 2)/2 + (2/3)(2 + 1 + 0)/2] = 1/2; κ = 1 − (1/6)/(1/2) = 2/3
    kappa = MEASURE.statistic(ScoringScale((0.0, 1.0, 2.0), 1.0))
    assert kappa([0, 1, 2], [0, 2, 2]) == pytest.approx(2 / 3)
