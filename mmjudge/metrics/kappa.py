"""Cohen's κ (unweighted, linear, quadratic, binarised), accuracy, mean absolute error, the
confusion matrix and label distributions."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.labels import (
    FloatArray,
    LabelSet,
    Weights,
    as_labels,
    confusion_tables,
    label_space,
    paired,
)


def _weight_matrix(k: int, weights: Weights) -> FloatArray:
    index = np.arange(k, dtype=np.float64)
    distance = np.abs(index[:, None] - index[None, :])
    if weights is None:
        return (distance > 0).astype(np.float64)
    if weights == "linear":
        return distance
    if weights == "quadratic":
        return distance**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def kappa_from_tables(tables: FloatArray, weights: Weights, undefined: float) -> FloatArray:
    """κ for a stack of contingency tables ``(..., k, k)``."""
    k = tables.shape[-1]
    w = _weight_matrix(k, weights)
    n = tables.sum(axis=(-2, -1))
    rows, cols = tables.sum(axis=-1), tables.sum(axis=-2)
    observed = (tables * w).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.einsum("...i,ij,...j->...", rows, w, cols) / n
        kappa = 1.0 - observed / expected
    return np.where((n > 0) & (expected > 0), kappa, undefined)


def cohen_kappa(
    a: Any,
    b: Any,
    labels: LabelSet | None = None,
    weights: Weights = None,
    *,
    undefined: float = math.nan,
) -> float:
    """Cohen's κ between two raters, unweighted or with linear/quadratic weights.

    Items where either label is missing are dropped. ``labels`` fixes the categories and
    their order (items with a label outside it are dropped); by default it is the sorted
    union of the labels seen. As in scikit-learn, weights use the *position* of a label in
    that list, so pass the full grade scale when some grade might be unused.

    κ is undefined when there is nothing to compare or when chance agreement is already
    perfect (both raters gave every item one and the same label, so observed agreement is
    perfect too); ``undefined`` (default ``nan``, as scikit-learn's default) is returned then.
    Matches ``sklearn.metrics.cohen_kappa_score`` wherever that is defined.
    """
    x, y = paired(a, b)
    label_set = label_space(labels, x, y)
    if label_set.size == 0:
        return undefined
    return float(kappa_from_tables(confusion_tables(x, y, label_set)[0], weights, undefined))


def kappa_metric(
    grades: Sequence[float] | FloatArray, weights: Weights = None
) -> Callable[..., float]:
    """Cohen's κ on a fixed scale (``grades`` as its categories), in the form the bootstrap
    evaluates quickly (:func:`mmjudge.metrics.bootstrap_ci`)."""
    labels = tuple(float(g) for g in grades)
    return functools.partial(cohen_kappa, labels=labels, weights=weights)


def default_relevant_from(grades: Sequence[float]) -> float:
    """The lowest grade of the upper half of a scale: 2 on 0–3, 1 on 0–2, 3 on 1–4."""
    ordered = sorted(grades)
    if not ordered:
        raise ValueError("cannot pick a relevance threshold on an empty scale")
    return float(ordered[len(ordered) // 2])


def binarise(labels: Any, relevant_from: float) -> FloatArray:
    """1.0 where the grade is at least ``relevant_from``, 0.0 below it, ``nan`` kept."""
    x = as_labels(labels)
    out = (x >= relevant_from).astype(np.float64)
    out[np.isnan(x)] = np.nan
    return out


def binary_kappa(a: Any, b: Any, relevant_from: float, *, undefined: float = math.nan) -> float:
    """Unweighted κ after binarising both raters' grades at ``relevant_from``."""
    return cohen_kappa(
        binarise(a, relevant_from), binarise(b, relevant_from), [0, 1], undefined=undefined
    )


def accuracy(a: Any, b: Any) -> float:
    """Fraction of items (both labels present) where the two labels are equal."""
    x, y = paired(a, b)
    return float(np.mean(x == y)) if x.size else math.nan


def mean_absolute_error(a: Any, b: Any) -> float:
    """Mean absolute grade difference over items where both labels are present."""
    x, y = paired(a, b)
    return float(np.mean(np.abs(x - y))) if x.size else math.nan


def confusion_matrix(a: Any, b: Any, labels: LabelSet | None = None) -> npt.NDArray[np.int64]:
    """Counts with rows for ``a``'s label and columns for ``b``'s, in ``labels`` order.

    Same layout and defaults as ``sklearn.metrics.confusion_matrix(a, b, labels=labels)``;
    items with a missing label or a label outside ``labels`` are not counted.
    """
    x, y = paired(a, b)
    label_set = label_space(labels, x, y)
    return confusion_tables(x, y, label_set)[0].astype(np.int64)


def label_distribution(labels: Any, grades: LabelSet | None = None) -> dict[float, int]:
    """How many items got each grade (missing labels not counted), in grade order.

    Every grade in ``grades`` is listed, with 0 when unused; grades seen outside the scale
    are listed too. Whole-number grades are returned as ``int`` keys.
    """
    x = as_labels(labels)
    x = x[~np.isnan(x)]
    values, counts = np.unique(x, return_counts=True)
    found = dict(zip(values.tolist(), counts.tolist(), strict=True))
    keys = sorted(set(found) | {float(g) for g in ([] if grades is None else grades)})
    return {_plain(key): int(found.get(key, 0)) for key in keys}


def _plain(value: float) -> float:
    return int(value) if float(value).is_integer() else float(value)
