"""Judges scored against a race's asked grades (``mmjudge.studies.asked_agreement``): each
κ and κ difference is the 1/π-weighted κ a hand computation gives, not the unweighted one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mmjudge.studies.asked_agreement import (
    AskedDraw,
    AskedReference,
    judge_kappas,
    paired_difference,
)


def weighted_kappa(person: list[float], judge: list[float], weights: list[float]) -> float:
    """Cohen's κ of the confusion table each item enters with its weight, by hand: p_o the
    weighted share of agreement, p_e the product of the weighted marginal shares."""
    total = sum(w for w, j in zip(weights, judge, strict=True) if not math.isnan(j))
    agree = sum(
        w for p, j, w in zip(person, judge, weights, strict=True) if not math.isnan(j) and p == j
    )
    grades = sorted(set(person) | {j for j in judge if not math.isnan(j)})
    chance = 0.0
    for g in grades:
        h = sum(w for p, j, w in zip(person, judge, weights, strict=True) if p == g and j == j)
        a = sum(w for j, w in zip(judge, weights, strict=True) if j == g)
        chance += (h / total) * (a / total)
    return (agree / total - chance) / (1 - chance)


# 40 items: the first 10 drawn where the judges disagree (π = 1), the other 30 where they
# agree (π = 0.1, each standing for ten): judge a right on all of them, b wrong on the first 10
PERSON = [float(i % 3) for i in range(40)]
JUDGE_A = list(PERSON)
JUDGE_B = [float((i + 1) % 3) if i < 10 else float(i % 3) for i in range(40)]
JUDGE_A[3] = 2.0  # a is wrong once where π = 1
JUDGE_B[30] = math.nan  # b gave no grade to one item
PI = [1.0] * 10 + [0.1] * 30
REFERENCE = AskedReference(
    [(f"q{i // 4}", f"d{i}") for i in range(40)],
    np.asarray(PERSON),
    1.0 / np.asarray(PI),
    AskedDraw(graded=40, rounds=2, waiting=0),
)


def test_each_judges_kappa_is_the_hand_computed_weighted_one() -> None:
    found = judge_kappas(REFERENCE, [np.asarray(JUDGE_A), np.asarray(JUDGE_B)])
    weights = list(1.0 / np.asarray(PI))
    for got, judge in zip(found, (JUDGE_A, JUDGE_B), strict=True):
        assert got.kappa.estimate == pytest.approx(weighted_kappa(PERSON, judge, weights))
        unweighted = weighted_kappa(PERSON, judge, [1.0] * 40)
        assert abs(got.kappa.estimate - unweighted) > 0.02
        assert got.kappa.low < got.kappa.estimate < got.kappa.high
    assert [f.n_items for f in found] == [40, 39]
    assert found[0].n_queries == 10


def test_a_pairs_difference_is_on_the_items_both_graded_weighted() -> None:
    found = paired_difference(REFERENCE, np.asarray(JUDGE_A), np.asarray(JUDGE_B))
    assert found is not None
    both = [i for i in range(40) if not math.isnan(JUDGE_B[i])]
    weights = [1.0 / PI[i] for i in both]
    kappa_a = weighted_kappa([PERSON[i] for i in both], [JUDGE_A[i] for i in both], weights)
    kappa_b = weighted_kappa([PERSON[i] for i in both], [JUDGE_B[i] for i in both], weights)
    assert found.kappa_a == pytest.approx(kappa_a)
    assert found.kappa_b == pytest.approx(kappa_b)
    assert found.difference == pytest.approx(kappa_a - kappa_b)
    assert found.n_items == 39
    assert found.low < found.difference < found.high
    se = (found.high - found.low) / (2 * stats.norm.ppf(0.975))
    assert found.p_value == pytest.approx(2 * stats.norm.sf(abs(found.difference) / se))
    assert found.p_value < 0.05  # b is wrong on all ten disagreements
    unweighted = [1.0] * len(both)
    plain = weighted_kappa([PERSON[i] for i in both], [JUDGE_A[i] for i in both], unweighted)
    assert abs(found.kappa_a - plain) > 0.01


def test_no_shared_item_is_no_comparison_and_the_draw_says_how_grades_were_asked() -> None:
    nothing = np.full(40, np.nan)
    assert paired_difference(REFERENCE, np.asarray(JUDGE_A), nothing) is None
    line = AskedDraw(graded=58, rounds=3, waiting=7).line()
    assert "58 grades over 3 rounds, each weighted 1/π" in line
    assert "7 more asked by the round the race waits on are not read" in line
    assert "over 1 round," in AskedDraw(graded=5, rounds=1, waiting=0).line()
