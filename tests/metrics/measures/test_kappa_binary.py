"""κ on grades cut at relevant_from, by hand."""

from __future__ import annotations

import pytest

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import ScoringScale

MEASURE = catalogue.measure("kappa_binary")


def test_declaration() -> None:
    assert (MEASURE.label, MEASURE.header) == ("κ binary", "kappa_bin")
    assert not MEASURE.interval and MEASURE.higher_is_better


def test_value_by_hand() -> None:
    # cut at 2 on 0–3: reference 0 1 2 3 → 0 0 1 1, judge 1 2 2 3 → 0 1 1 1, whose κ is 1/2
    # (p_o = 3/4, p_e = 1/2); cut at 1 the judge calls every item relevant (1 1 1 1), so
    # p_o = p_e = 3/4 and κ = 0: no agreement beyond chance
    grades = (0.0, 1.0, 2.0, 3.0)
    at_two = MEASURE.statistic(ScoringScale(grades, 2.0))
    at_one = MEASURE.statistic(ScoringScale(grades, 1.0))
    assert at_two([0, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(0.5)
    assert at_one([0, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(0.0)
