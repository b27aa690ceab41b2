"""κ's jackknife interval over queries (mmjudge.metrics.jackknife): against κ computed with
each query left out by hand, Student's t from scipy, the degrees of freedom by hand, and, with
four queries, against the query bootstrap it replaces in plans."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mmjudge.metrics import bootstrap_ci, cohen_kappa
from mmjudge.metrics.jackknife import (
    cluster_degrees_of_freedom,
    from_left_out,
    kappa_jackknife,
    paired_kappa_jackknife,
)
from mmjudge.metrics.kappa import kappa_metric

GRADES = [0, 1, 2]


def clustered(seed: int, n_queries: int, sizes: tuple[int, int] = (8, 16)):
    """Queries with their own judge accuracy, so κ differs from query to query."""
    rng = np.random.default_rng(seed)
    per_query = rng.integers(sizes[0], sizes[1], n_queries)
    queries = np.repeat(np.arange(n_queries), per_query)
    human = rng.integers(0, 3, queries.size).astype(float)
    accuracy = rng.beta(3, 2, n_queries)[queries]
    judge = np.where(rng.random(queries.size) < accuracy, human, rng.integers(0, 3, queries.size))
    other = np.where(rng.random(queries.size) < 0.5, human, rng.integers(0, 3, queries.size))
    return queries, human, judge.astype(float), other.astype(float)


def test_the_interval_is_kappa_left_out_query_by_query_with_t() -> None:
    queries, human, judge, _ = clustered(0, 6, sizes=(10, 11))  # six queries of 10 items
    found = kappa_jackknife(queries, human, judge, GRADES)
    left_out = np.array(
        [cohen_kappa(human[queries != g], judge[queries != g], labels=GRADES) for g in range(6)]
    )
    se = math.sqrt(5 / 6 * np.sum((left_out - left_out.mean()) ** 2))
    assert found.estimate == pytest.approx(cohen_kappa(human, judge, labels=GRADES))
    assert found.standard_error == pytest.approx(se)
    assert found.degrees_of_freedom == pytest.approx(5)  # one size: q − 1
    assert found.half_width == pytest.approx(stats.t.ppf(0.975, 5) * se)
    assert (found.n_items, found.n_queries, found.n_undefined) == (60, 6, 0)


def test_the_paired_interval_is_the_difference_left_out_query_by_query() -> None:
    queries, human, a, b = clustered(1, 7)
    b[::5] = np.nan  # items b did not grade are left out for both
    keep = ~np.isnan(b)
    found = paired_kappa_jackknife(queries, human, a, b, GRADES)

    def kappa(judge: np.ndarray, rows: np.ndarray) -> float:
        return cohen_kappa(human[rows], judge[rows], labels=GRADES)

    diffs = np.array(
        [kappa(a, keep & (queries != g)) - kappa(b, keep & (queries != g)) for g in range(7)]
    )
    se = math.sqrt(6 / 7 * np.sum((diffs - diffs.mean()) ** 2))
    assert found.estimate == pytest.approx(kappa(a, keep) - kappa(b, keep))
    assert found.standard_error == pytest.approx(se)
    assert found.n_items == int(keep.sum())


def test_degrees_of_freedom_fall_when_a_few_queries_hold_most_items() -> None:
    assert cluster_degrees_of_freedom([10, 10, 10, 10]) == pytest.approx(3)
    # squares 1, 1, 4: (2/3) · 6² / (1 + 1 + 16) = 4/3
    assert cluster_degrees_of_freedom([1, 1, 2]) == pytest.approx(4 / 3)
    assert cluster_degrees_of_freedom([100, 1, 1, 1]) < 1.1
    assert math.isnan(cluster_degrees_of_freedom([5]))
    assert cluster_degrees_of_freedom([3, 0, 3]) == pytest.approx(1)  # empty queries: none


def test_no_interval_from_one_query_or_when_a_query_is_needed_for_kappa() -> None:
    one = kappa_jackknife(["q"] * 5, [0, 1, 2, 1, 0], [0, 1, 2, 2, 0], GRADES)
    assert math.isnan(one.standard_error) and math.isnan(one.half_width)
    # only q1's grades vary: without it, κ is undefined (chance agreement is perfect)
    queries = ["q1"] * 4 + ["q2"] * 3 + ["q3"] * 3
    human = [0, 1, 2, 1, 2, 2, 2, 2, 2, 2]
    found = kappa_jackknife(queries, human, human, GRADES)
    assert found.n_undefined == 1 and math.isnan(found.low)
    assert math.isnan(from_left_out(math.nan, [0.1, 0.2], [3, 3]).standard_error)


@pytest.mark.slow
def test_with_four_queries_it_holds_kappa_where_the_bootstrap_does_not() -> None:
    """Pilots of four queries from a population of 400: the query bootstrap's percentile
    interval holds the population's κ too rarely for a 95% interval; the jackknife's t
    interval holds it about as often as it says."""
    queries, human, judge, _ = clustered(2, 400)
    truth = cohen_kappa(human, judge, labels=GRADES)
    held = {"bootstrap": 0, "jackknife": 0}
    pilots = 200
    for rep in range(pilots):
        chosen = np.isin(queries, np.random.default_rng(rep).choice(400, 4, replace=False))
        q, h, j = queries[chosen], human[chosen], judge[chosen]
        boot = bootstrap_ci(kappa_metric(GRADES), q, h, j, n_boot=200, seed=rep)
        jack = kappa_jackknife(q, h, j, GRADES)
        held["bootstrap"] += boot.low <= truth <= boot.high
        held["jackknife"] += jack.low <= truth <= jack.high
    assert held["bootstrap"] / pilots < 0.85, held
    # measured: 79% and 94.5% of 200 pilots
    assert held["jackknife"] / pilots >= 0.92, held
