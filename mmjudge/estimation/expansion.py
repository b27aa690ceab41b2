"""The first guess of the human grades and the expansion of the ideal DCG around it: what
:func:`mmjudge.estimation.prediction.build_columns` needs to write a system's nDCG@10 as a mean
over items (see that module's docstring for the whole construction).

Kept apart from the estimation because it is a model of the human grades, not of the
sampling: the guess (:func:`pilot`) says what each item's human grade is likely to be from its
judge grade and its query's labelled residuals, and :func:`ideal_linear` turns that into a
tangent of each query's ideal DCG that stays honest where the guess is uncertain.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.labels import FloatArray


class GradedQueries(Protocol):
    """What the guess and the expansion read of a design
    (:class:`mmjudge.estimation.prediction.Design`)."""

    @property
    def grades(self) -> FloatArray:
        """The grade scale, ascending."""

    @property
    def codes(self) -> npt.NDArray[np.intp]:
        """Query number of each item."""

    @property
    def n_queries(self) -> int: ...

    @property
    def depth(self) -> int:
        """The rank depth of the measures (10)."""


def discounts(depth: int) -> FloatArray:
    """The DCG discount of each place 1..``depth``: ``1 / log2(place + 1)``."""
    return 1.0 / np.log2(np.arange(2, depth + 2, dtype=float))


class Pilot(NamedTuple):
    """A first guess of each item's human grade from its judge grade, for the point the
    nDCG columns are linearised at."""

    gain: FloatArray
    """Per item: the expected human gain."""
    at_least: FloatArray
    """items × positive grades: the chance the human grade is at least each of them."""


#: How many labelled items a query's own correction of the pilot counts as against the
#: pooled guess: its correction is the mean of its residuals shrunk by ``n / (n + this)``.
QUERY_SHRINK = 3.0


def pilot(design: GradedQueries, human: FloatArray, judge: FloatArray, labelled: Any) -> Pilot:
    """Human grades expected from judge grades, from the labelled items: per judge grade,
    the labelled items' mean gain and share at or above each positive grade (all labelled
    items where no labelled item has that judge grade), then moved per query by the mean
    of the query's labelled residuals, shrunk towards none (:data:`QUERY_SHRINK`).

    The per-query step matters for nDCG: a judge that grades one query's passages too
    harshly makes the pooled guess of that query's ideal DCG wrong by more than labels
    spread over all items correct, and the expansion's remainder then biases the
    estimate (on the LLMJudge files at 500 labels, coverage 0.85-0.88 without this step,
    0.94-0.96 with it; docs/estimates.md)."""
    positive = design.grades[design.grades > 0]
    at = np.searchsorted(design.grades, judge)
    at = np.minimum(at, design.grades.size - 1)
    mask = np.asarray(labelled, dtype=bool)
    g = design.grades.size
    count = np.bincount(at[mask], minlength=g).astype(float)
    features = np.column_stack([np.maximum(human, 0.0)] + [human >= t for t in positive])
    sums = np.stack(
        [np.bincount(at[mask], weights=f[mask], minlength=g) for f in features.T], axis=1
    )
    overall = features[mask].mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(count[:, None] > 0, sums / count[:, None], overall[None, :])
    guess = means[at]
    residual = np.where(mask[:, None], features - guess, 0.0)
    per_query = np.bincount(design.codes, weights=mask.astype(float), minlength=design.n_queries)
    shift = np.stack(
        [np.bincount(design.codes, weights=r, minlength=design.n_queries) for r in residual.T],
        axis=1,
    ) / (per_query[:, None] + QUERY_SHRINK)
    moved = np.maximum(guess + shift[design.codes], 0.0)
    return Pilot(moved[:, 0], np.minimum(moved[:, 1:], 1.0))


def cumulative(depth: int) -> FloatArray:
    return np.concatenate([[0.0], np.cumsum(discounts(depth))])


def ideal_linear(design: GradedQueries, guess: Pilot) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per query, the ideal DCG as a function of how many items are at or above each
    grade (``Σ_t D(C_t)``, ``D`` the running sum of discounts), expanded around what the
    pilot expects of it: (the expected ideal DCG, queries × grades: the slope an item adds
    for each grade it could have, the constant of the tangent).

    ``D`` is concave, so its tangent at the expected count lies above it and an expansion
    there overstates the ideal DCG whenever the count is uncertain. Instead each count is
    taken as uncertain as the pilot says (normal, with the variance of a sum of
    independent yes/no items, rounded to whole counts), and the expansion is around the
    expected ``D`` with the expected discount at the count as its slope."""
    grades = design.grades
    positive = grades[grades > 0]
    per_grade = [
        (
            np.bincount(design.codes, weights=p, minlength=design.n_queries),
            np.bincount(design.codes, weights=p * (1.0 - p), minlength=design.n_queries),
        )
        for p in guess.at_least.T
    ]
    counts = np.stack([mean for mean, _ in per_grade], axis=1).astype(float)
    spread = np.sqrt(np.stack([var for _, var in per_grade], axis=1))
    chance = count_chances(counts, spread, design.depth)  # queries × grades × 0..depth
    # gains step from one positive grade to the next: gain = Σ_t step_t · [grade ≥ t]
    steps = np.diff(np.concatenate([[0.0], positive]))
    ideal = ((chance @ cumulative(design.depth)) * steps).sum(axis=1)
    slope = (chance[..., :-1] @ discounts(design.depth)) * steps
    constant = (slope * counts).sum(axis=1)
    # an item with grade g adds the slopes of every positive grade at or below g
    reached = (grades[None, :] >= positive[:, None]).astype(float)  # positives × grades
    slope_at = slope @ reached
    return ideal, slope_at, constant


def count_chances(mean: FloatArray, spread: FloatArray, depth: int) -> FloatArray:
    """The chance of each whole count ``0 … depth-1`` and of ``depth`` or more, for counts
    normal with ``mean`` and ``spread`` rounded to whole numbers (a point mass at the
    rounded mean where the spread is zero)."""
    edges = np.arange(depth, dtype=float) + 0.5  # between k and k+1
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (edges - mean[..., None]) / spread[..., None]
    exact = (edges - mean[..., None]) >= 0
    below = np.where(spread[..., None] > 0, normal_cdf(z), exact.astype(float))
    cdf = np.concatenate([below, np.ones((*mean.shape, 1))], axis=-1)
    return np.diff(cdf, prepend=0.0, axis=-1)


def normal_cdf(z: FloatArray) -> FloatArray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
