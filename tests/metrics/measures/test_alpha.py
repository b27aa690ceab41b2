"""Krippendorff's α, ordinal: two raters and three, worked out from the coincidence matrix."""

from __future__ import annotations

import numpy as np
import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import Comparison, ScoringScale

MEASURE = catalogue.measure("alpha")
SCALE = ScoringScale((0.0, 1.0), 1.0)


def test_declared_with_a_pooled_and_a_humans_only_figure() -> None:
    assert MEASURE.label == "α" and not MEASURE.interval and MEASURE.chance == 0.0
    assert MEASURE.summary_keys() == ["alpha", "alpha_pooled", "alpha_humans"]
    assert MEASURE.raters is not None and Comparison.POOLED in MEASURE.compares


def test_two_raters_by_hand() -> None:
    # reference 0 0 1 1, judge 0 1 1 1: coincidences o00 = 2, o01 = o10 = 1, o11 = 4, so
    # n0 = 3, n1 = 5, n = 8; with two values the ordinal distance is one constant, and
    # α = 1 − (n − 1)·(o01 + o10) / (2·n0·n1) = 1 − 7·2/30 = 8/15
    alpha = MEASURE.statistic(SCALE)
    assert alpha(np.array([0.0, 0, 1, 1]), np.array([0.0, 1, 1, 1])) == pytest.approx(8 / 15)


def test_three_raters_by_hand() -> None:
    # units (0, 0, 0), (0, 0, 1), (1, 1, 1): each pair of a unit of three counts 1/2, so
    # o00 = 3 + 1, o01 = o10 = 1, o11 = 3; n0 = 5, n1 = 4, n = 9; α = 1 − 8·2/40 = 3/5
    assert MEASURE.raters is not None
    matrix = np.array([[0.0, 0, 1], [0.0, 0, 1], [0.0, 1, 1]])
    assert MEASURE.raters(SCALE)(matrix) == pytest.approx(0.6)
