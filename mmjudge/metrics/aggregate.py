"""Aggregation maths: one label per item from several judges' labels.

Aggregators (``how``):

- ``majority`` (= ``majority-mean``): the grade most members gave; a tie between several
  grades is broken by the rounded mean of the tied grades;
- ``majority-max`` / ``majority-min``: ties go to the highest / lowest tied grade;
- ``majority-random``: ties go to a tied grade drawn at random (seeded; items are drawn in
  their order of first appearance, so the same members and seed give the same labels);
- ``mean``: the rounded mean of every member's grade.

Rounding is half up onto the scale: the grade nearest to the mean, and an exact half goes to
the higher grade (a tie between 1 and 2 gives 2, the mean 0.5 gives 1). On a scale with
gaps (0, 1, 3) the nearest grade on the scale is taken, halves again upwards. A member's
missing label (``nan``) is ignored; an item no member labels stays unlabelled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

AGGREGATORS = (
    "majority",
    "majority-mean",
    "majority-max",
    "majority-min",
    "majority-random",
    "mean",
)


def round_to_scale(values: Any, grades: Sequence[float] | FloatArray) -> FloatArray:
    """Each value moved to the nearest grade of ``grades``, exact halves upwards; ``nan``
    stays ``nan``."""
    x = np.asarray(values, dtype=float)
    scale = np.sort(np.asarray(grades, dtype=float))
    if scale.size == 0:
        raise ValueError("cannot round onto an empty scale")
    distance = np.abs(x[..., None] - scale)
    # the last (highest) of the nearest grades wins a tie: search the reversed scale
    nearest = scale.size - 1 - np.argmin(distance[..., ::-1], axis=-1)
    out = scale[nearest]
    return np.where(np.isnan(x), np.nan, out)


def _scale_of(matrix: FloatArray, grades: Sequence[float] | None) -> FloatArray:
    if grades is not None:
        return np.sort(np.asarray(grades, dtype=float))
    present = matrix[~np.isnan(matrix)]
    if present.size == 0:
        return np.empty(0)
    return np.arange(np.floor(present.min()), np.floor(present.max()) + 1.0)


def aggregate(
    matrix: Any,
    how: str = "majority",
    grades: Sequence[float] | None = None,
    seed: int = 0,
) -> FloatArray:
    """One label per item (column) from a members × items matrix (``nan`` = no label).

    ``grades`` is the scale (default: every whole number from the lowest to the highest
    label seen). See the module docstring for the aggregators and the rounding rule.
    """
    if how not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {how!r}; use one of {', '.join(AGGREGATORS)}")
    m = np.atleast_2d(np.asarray(matrix, dtype=float))
    scale = _scale_of(m, grades)
    m = np.where(np.isin(m, scale), m, np.nan)  # a label off the scale counts as none
    n_items = m.shape[1]
    present = ~np.isnan(m)
    given = present.sum(axis=0)
    if scale.size == 0:
        return np.full(n_items, np.nan)
    if how == "mean":
        with np.errstate(invalid="ignore"):
            means = np.where(present, m, 0.0).sum(axis=0) / np.where(given > 0, given, 1)
        return np.where(given > 0, round_to_scale(means, scale), np.nan)
    counts = (m[:, :, None] == scale[None, None, :]).sum(axis=0)  # items × grades
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top) & (top > 0)
    n_tied = tied.sum(axis=1)
    tie_break = how.split("-", 1)[1] if "-" in how else "mean"
    if tie_break == "max":
        choice = scale[scale.size - 1 - np.argmax(tied[:, ::-1], axis=1)]
    elif tie_break == "min":
        choice = scale[np.argmax(tied, axis=1)]
    elif tie_break == "random":
        rng = np.random.default_rng(seed)
        keys = np.where(tied, rng.random(tied.shape), -1.0)
        choice = scale[np.argmax(keys, axis=1)]
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            tied_mean = (tied * scale).sum(axis=1) / np.where(n_tied > 0, n_tied, 1)
        choice = round_to_scale(tied_mean, scale)
    return np.where(given > 0, choice, np.nan)


def panel(
    how: str = "majority", grades: Sequence[float] | None = None, seed: int = 0
) -> Callable[[FloatArray], FloatArray]:
    """A panel function for :func:`mmjudge.metrics.alignment.score_alignment`."""
    if how not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {how!r}; use one of {', '.join(AGGREGATORS)}")
    return lambda matrix: aggregate(matrix, how, grades, seed)
