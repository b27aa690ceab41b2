"""κ, unweighted: its declaration, and its value on labels small enough to work out by hand."""

from __future__ import annotations

import math

import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import Comparison, ScoringScale

KAPPA = catalogue.measure("kappa")


def test_declared_as_the_headline_with_an_interval_against_each_assessor_and_between_them() -> None:
    assert KAPPA.name == catalogue.HEADLINE and KAPPA.label == "κ"
    assert KAPPA.interval and KAPPA.higher_is_better and KAPPA.chance == 0.0
    assert (KAPPA.low, KAPPA.high) == (-1.0, 1.0)
    assert KAPPA.summary_keys() == ["kappa", "kappa_by_annotator", "human_human_kappa"]
    assert Comparison.EACH_ASSESSOR in KAPPA.compares


def test_value_by_hand() -> None:
    # reference 0 0 1 1, judge 0 1 1 1: p_o = 3/4; marginals (1/2, 1/2) and (1/4, 3/4) give
    # p_e = 1/2 · 1/4 + 1/2 · 3/4 = 1/2, so κ = (3/4 − 1/2) / (1 − 1/2) = 1/2
    kappa = KAPPA.statistic(ScoringScale((0.0, 1.0), 1.0))
    assert kappa([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.5)
    # an unused grade of the scale changes nothing unweighted; an item with no label is left out
    kappa3 = KAPPA.statistic(ScoringScale((0.0, 1.0, 2.0), 1.0))
    assert kappa3([0, 0, 1, 1, math.nan], [0, 1, 1, 1, 0]) == pytest.approx(0.5)
