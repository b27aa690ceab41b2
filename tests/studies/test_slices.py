"""A judge's score by slice: the slices partition the items, each slice's κ is the κ of its
items alone, and the test of whether κ depends on the slice can tell."""

from __future__ import annotations

import numpy as np
import pytest

from mmjudge.metrics.scoring import score_judge
from mmjudge.studies.slices import score_slices, slice_test

RNG = np.random.default_rng(3)
N_QUERIES = 60
QUERIES = np.repeat([f"q{i:02d}" for i in range(N_QUERIES)], 5)
HUMAN = RNG.integers(0, 3, QUERIES.size).astype(float)
#: Each query in one slice (as a language is): a, b or c in turn.
SLICES = np.asarray([["a", "b", "c"][int(q[1:]) % 3] for q in QUERIES], dtype=object)


def judge_failing_on(slice_name: str) -> np.ndarray:
    """Agrees with people everywhere except on one slice, where it answers at random."""
    noise = RNG.integers(0, 3, QUERIES.size).astype(float)
    return np.where(np.equal(SLICES, slice_name), noise, HUMAN)


def test_each_slice_is_its_items_scored_by_hand_and_the_slices_partition_them() -> None:
    judge = judge_failing_on("b")
    judge[:7] = np.nan  # unparseable answers take part in no slice
    names = SLICES.copy()
    names[-5:] = None  # nor do items without a slice
    found = score_slices(QUERIES, names, HUMAN, judge, [0, 1, 2], n_boot=200, n_perm=99)
    assert list(found.scores) == ["a", "b", "c"]
    for name, score in found.scores.items():
        mask = names == name
        by_hand = score_judge(QUERIES[mask], HUMAN[mask], judge[mask], [0, 1, 2], n_boot=200)
        assert score == by_hand
    whole = score_judge(QUERIES[:-5], HUMAN[:-5], judge[:-5], [0, 1, 2], n_boot=0)
    assert sum(score.n_items for score in found.scores.values()) == whole.n_items
    assert found.worst == "b"


def test_the_test_finds_a_slice_that_fails_and_not_one_that_does_not() -> None:
    failing = judge_failing_on("c")
    scored = ~np.isnan(failing)
    assert slice_test(QUERIES, SLICES, HUMAN, failing, [0, 1, 2], n_perm=199) < 0.05
    steady = np.where(RNG.random(QUERIES.size) < 0.3, RNG.integers(0, 3, QUERIES.size), HUMAN)
    p = slice_test(QUERIES[scored], SLICES[scored], HUMAN, steady, [0, 1, 2], n_perm=199)
    assert p > 0.05


def test_the_test_is_seeded() -> None:
    judge = judge_failing_on("a")
    first = slice_test(QUERIES, SLICES, HUMAN, judge, [0, 1, 2], n_perm=50, seed=4)
    assert slice_test(QUERIES, SLICES, HUMAN, judge, [0, 1, 2], n_perm=50, seed=4) == first


def test_one_slice_cannot_be_tested() -> None:
    one = np.asarray(["a"] * QUERIES.size, dtype=object)
    assert np.isnan(slice_test(QUERIES, one, HUMAN, HUMAN, [0, 1, 2], n_perm=10))


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        score_slices(QUERIES, SLICES[:-1], HUMAN, HUMAN, [0, 1, 2])
