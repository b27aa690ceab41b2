"""What a small pilot can say (mmjudge.estimation.pilot): when it is too small to plan from,
the bound of its spread, and the queries a half-width needs, against scipy's quantiles and
hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mmjudge.estimation import pilot
from mmjudge.metrics.jackknife import JackknifeResult


def spread(se: float = 0.05, df: float = 7.0, items: int = 80, queries: int = 8):
    return pilot.PilotSpread(0.6, se, df, items, queries)


def test_the_widening_is_the_upper_bound_of_a_standard_deviation() -> None:
    for df in (3, 7, 49.5):
        expected = math.sqrt(df / stats.chi2.ppf(0.05, df))
        assert pilot.pilot_widening(df) == pytest.approx(expected)
    assert pilot.pilot_widening(3) == pytest.approx(2.92, abs=0.01)
    assert pilot.pilot_widening(7, confidence=0.8) < pilot.pilot_widening(7)
    assert math.isnan(pilot.pilot_widening(math.nan))


def test_queries_for_a_half_width_give_that_half_width() -> None:
    found = spread()
    # at the pilot's own size, the pilot's own half-width
    assert pilot.half_width_at(found, 8) == pytest.approx(stats.t.ppf(0.975, 7) * 0.05)
    assert found.half_width == pytest.approx(stats.t.ppf(0.975, 7) * 0.05)
    q = pilot.queries_for_half_width(found, 0.02)
    assert pilot.half_width_at(found, q) == pytest.approx(0.02, rel=1e-6)
    # many queries: the normal quantile, σ = SE·√8
    sigma = 0.05 * math.sqrt(8)
    assert q == pytest.approx((1.96 * sigma / 0.02) ** 2, rel=0.05)
    wide = pilot.queries_for_half_width(found, 0.02, widening=2.0)
    assert wide == pytest.approx(4 * q, rel=0.02)
    # the future queries keep the pilot's mix of sizes: its degrees of freedom per query
    uneven = pilot.PilotSpread(0.6, 0.05, 3.5, 80, 8)
    assert pilot.half_width_at(uneven, 15) == pytest.approx(
        stats.t.ppf(0.975, 3.5 * 14 / 7) * sigma / math.sqrt(15)
    )
    assert pilot.queries_for_half_width(found, 10.0) == 2.0  # any two queries do
    assert math.isnan(pilot.queries_for_half_width(found, 0.02, widening=math.inf))


@pytest.mark.parametrize(
    ("queries", "grades", "said"),
    [
        (["q1", "q1"], [1, 2], "the pilot has 2 human labels in 1 query:"),
        (["q1"] * 5, [0, 1, 2, 1, 0], "the pilot has 5 human labels in 1 query:"),
        (["q1"] * 10 + ["q2"] * 10, [0, 1] * 10, "the pilot has 20 human labels in 2 queries:"),
        ([f"q{i % 5}" for i in range(19)], [0, 1] * 9 + [2], "has 19 human labels in 5 queries"),
        (
            [f"q{i % 5}" for i in range(25)],
            [2] * 25,
            "every one of the pilot's 25 human labels is 2",
        ),
    ],
)
def test_a_pilot_too_small_is_named_with_the_pilot_that_would_do(queries, grades, said) -> None:
    found = pilot.pilot_problem(queries, grades)
    assert found is not None and said in found
    assert found.endswith(pilot.WOULD_DO) and "\n" not in found


def test_a_pilot_big_enough_has_no_problem() -> None:
    queries = [f"q{i % 4}" for i in range(20)]
    assert pilot.pilot_problem(queries, [0, 1, 2, 1] * 5) is None
    # the judge's missing grades shrink its pilot
    judge = [1.0] * 10 + [math.nan] * 10
    assert "10 human labels" in (pilot.pilot_problem(queries, [0, 1, 2, 1] * 5, judge) or "")


def _jackknife(se: float, undefined: int = 0) -> JackknifeResult:
    return JackknifeResult(0.238, 0.238 - se, 0.238 + se, 0.95, se, 4.0, 40, 5, undefined)


def test_no_spread_is_refused_not_planned_from() -> None:
    """Five queries whose κ is the same whichever is left out: a standard error of 0 would
    plan nothing and call every difference certain ("± 0.000"); it is refused."""
    with pytest.raises(pilot.PilotTooSmall, match="whichever of the pilot's 5 queries"):
        pilot.spread_of(_jackknife(0.0), "Δκ")
    with pytest.raises(pilot.PilotTooSmall, match="undefined without 1 query of the pilot's 5"):
        pilot.spread_of(_jackknife(math.nan, undefined=1), "κ")
    assert pilot.spread_of(_jackknife(0.05), "κ").standard_error == 0.05


def test_what_all_the_items_reach_is_from_the_central_spread() -> None:
    found = spread(se=0.05, df=7.0, items=80, queries=8)
    t = stats.t.ppf(0.975, 7)
    # every item of the pilot's queries labelled already: its own half-width, not widened
    assert pilot.reachable(found, 0.03, 80) == pytest.approx(t * 0.05)
    # four times the items: the items' part (0.03²) falls to a quarter, the queries' stays
    assert pilot.reachable(found, 0.03, 320) == pytest.approx(
        t * math.sqrt(0.05**2 - 0.03**2 + 0.03**2 / 4)
    )
    assert math.isnan(pilot.reachable(found, 0.03, 0))
    assert np.isfinite(pilot.reachable(found, 0.08, 80))  # analytic above the spread
