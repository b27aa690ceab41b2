"""Changed share, inflation and Δκ of a perturbed cell against its clean cell."""

from __future__ import annotations

import math

import numpy as np

from mmjudge.metrics.scoring import compare_judges
from mmjudge.studies.robustness import robustness

QUERIES = ["q1", "q1", "q1", "q2", "q2", "q3", "q3", "q3"]
HUMAN = [0, 1, 2, 0, 2, 1, 0, 2]
CLEAN = [0, 1, 2, 1, 2, 1, 0, None]
ATTACKED = [2, 1, 2, 2, 2, 2, 0, 2]


def test_counts_match_a_hand_count_on_the_items_both_graded() -> None:
    result = robustness(QUERIES, HUMAN, CLEAN, ATTACKED, [0, 1, 2], n_boot=200)
    assert result is not None
    # Seven items have both grades; three of them changed (0→2, 1→2, 1→2).
    assert result.n_items == 7
    assert math.isclose(result.changed.estimate, 3 / 7)
    assert math.isclose(result.inflation.estimate, (2 + 1 + 1) / 7)
    assert result.changed.low <= 3 / 7 <= result.changed.high
    assert result.changed.n_queries == 3


def test_delta_kappa_is_the_paired_comparison_of_attacked_against_clean() -> None:
    result = robustness(QUERIES, HUMAN, CLEAN, ATTACKED, [0, 1, 2], n_boot=200)
    assert result is not None and result.kappa is not None
    direct = compare_judges(QUERIES, HUMAN, ATTACKED, CLEAN, [0, 1, 2], n_boot=200)
    assert result.kappa == direct
    assert result.kappa.difference < 0  # the attack costs agreement here


def test_an_unmoved_judge_changes_nothing() -> None:
    result = robustness(QUERIES, HUMAN, CLEAN, CLEAN, [0, 1, 2], n_boot=100)
    assert result is not None
    assert result.changed.estimate == result.changed.high == 0
    assert result.inflation.estimate == 0
    assert result.kappa is not None and result.kappa.difference == 0


def test_no_shared_grades_is_none() -> None:
    nothing = [np.nan] * len(QUERIES)
    assert robustness(QUERIES, HUMAN, CLEAN, nothing, [0, 1, 2]) is None
