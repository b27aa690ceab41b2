"""The cut points a distilled judge's scores are graded by, fitted on its training pairs."""

from __future__ import annotations

from mmjudge.distill.pairs import Pair
from mmjudge.distill.train import cut_points, targets


def test_cut_points_give_the_training_pairs_the_teachers_shares() -> None:
    scores = [0.6, 0.1, 0.4, 0.2, 0.5, 0.3]
    taught = [2, 0, 1, 0, 2, 1]
    # two pairs below grade 1 and four below grade 2: half-way between the 2nd and 3rd lowest
    # scores, and between the 4th and 5th
    assert cut_points(scores, taught, [0, 1, 2]) == [0.25, 0.45]


def test_tied_scores_still_give_increasing_cut_points() -> None:
    cuts = cut_points([0.5, 0.5, 0.5], [0, 1, 2], [0, 1, 2])
    assert cuts[0] == 0.5 and cuts[1] > cuts[0]


def test_a_grade_nobody_was_taught_sits_outside_the_scores() -> None:
    # no grade 0 among the taught: every pair lies at or above the first cut point
    cuts = cut_points([0.2, 0.8], [1, 2], [0, 1, 2])
    assert cuts[0] < 0.2 and 0.2 < cuts[1] < 0.8


def test_targets_are_places_on_the_scale() -> None:
    pairs = [Pair("q", str(g), "q", "t", g, float(g), float("nan")) for g in (0, 1, 2, 3)]
    assert targets(pairs, [3, 2, 1, 0]) == [0.0, 1 / 3, 2 / 3, 1.0]
