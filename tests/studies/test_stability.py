"""κ between a judge's samples: its interval is exact where resampling has nothing to vary,
the same interval the canary check gives κ between two checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from mmjudge import metrics
from mmjudge.store import Bounds
from mmjudge.studies.drift import drift_summary
from mmjudge.studies.stability import stability_summary

SCALE = [0, 1, 2, 3]


def items(n: int) -> tuple[list[float], list[str], list[str]]:
    """``n`` items graded 0–3 in turn (every grade used evenly), eight to a query."""
    grades = [float(i % 4) for i in range(n)]
    return grades, [f"q{i // 8}" for i in range(n)], [f"r{i}" for i in range(n)]


def kappa(samples: list[list[float]], queries: list[str], results: list[str]) -> Bounds:
    return stability_summary(samples, queries, results, grades=SCALE, n_boot=200).kappa


def test_samples_that_always_agree_get_an_exact_interval_not_a_zero_width_one() -> None:
    grades, queries, results = items(240)
    two = kappa([grades, list(grades)], queries, results)
    assert two.estimate == 1 and two.high == 1  # holds 1
    assert two.low < two.high  # not [1.000, 1.000]
    # Chance agreement 1/4 (four grades used evenly): the low end is the Clopper–Pearson upper
    # bound of 0 unstable items in 240, carried through κ = (p_o − p_e) / (1 − p_e).
    _, share_high = proportion_confint(0, 240, alpha=0.05, method="beta")
    assert two.low == pytest.approx((1 - share_high - 0.25) / 0.75, abs=1e-12)
    assert round(two.low, 3) == 0.980
    few = kappa([grades[:40], grades[:40]], queries[:40], results[:40])
    assert few.low < two.low < 1 and few.high == 1  # fewer items, a wider interval
    three = kappa([grades, list(grades), list(grades)], queries, results)
    assert three == pytest.approx(two)  # more samples that agree: the same exact interval


def test_the_interval_is_the_one_the_canary_check_gives_for_the_same_labels() -> None:
    grades, queries, results = items(120)
    drift = drift_summary(grades, list(grades), queries, grades=SCALE, n_boot=200)
    assert kappa([grades, list(grades)], queries, results) == drift.kappa
    moved = [(g + 1) % 4 for g in grades]  # every item disagrees
    drift = drift_summary(grades, moved, queries, grades=SCALE, n_boot=200)
    every = kappa([grades, moved], queries, results)
    assert every == drift.kappa
    assert every.estimate == pytest.approx(metrics.cohen_kappa(grades, moved, labels=SCALE))


def test_a_zero_width_resampled_interval_gives_way_to_the_exact_one() -> None:
    grades, _, results = items(80)
    queries = ["q"] * 80  # one query: every resample is the same query
    second = list(grades)
    second[:4] = [(g + 1) % 4 for g in grades[:4]]
    result = kappa([grades, second], queries, results)
    expected = metrics.cohen_kappa(grades, second, labels=SCALE)
    assert result.estimate == pytest.approx(expected)
    assert result.low < expected < result.high < 1


def test_missing_answers_and_unstable_items_with_more_samples_keep_the_resampled_interval() -> None:
    grades, queries, results = items(160)
    second, third = list(grades), list(grades)
    third[:10] = [(g + 1) % 4 for g in grades[:10]]
    second[20:30] = [math.nan] * 10  # still two answers each: kept, and all agree there
    result = stability_summary([grades, second, third], queries, results, grades=SCALE, n_boot=200)
    assert result.n_unstable == 10 and result.n_items == 160
    assert result.kappa.low < result.kappa.estimate < result.kappa.high
    pairs = [v for v in result.kappa_pairs.values() if v is not None]
    assert result.kappa.estimate == pytest.approx(np.mean(pairs))
    agree = [grades, second, list(grades)]
    exact = stability_summary(agree, queries, results, grades=SCALE, n_boot=200).kappa
    assert exact.estimate == 1 and exact.low < 1 == exact.high


def test_a_single_grade_leaves_kappa_undefined() -> None:
    ones = [1.0] * 30
    result = kappa([ones, list(ones)], ["q"] * 30, [f"r{i}" for i in range(30)])
    assert result == Bounds()
