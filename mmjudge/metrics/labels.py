"""Label arrays in: the checks and encodings every metric shares, and the annotators' consensus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]
Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval", "ratio"]
#: A list of categories (grades), in the order κ's weights and matrices should use.
LabelSet = Sequence[float] | npt.NDArray[Any]


def as_labels(values: Any) -> FloatArray:
    """A 1-D float array with ``nan`` for every missing label (None, NaN, pd.NA)."""
    if hasattr(values, "to_numpy"):
        array = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        try:
            array = np.asarray(values, dtype=float)
        except TypeError:  # pd.NA inside a plain list
            array = pd.Series(list(values), dtype="Float64").to_numpy(dtype=float, na_value=np.nan)
    if array.ndim != 1:
        raise ValueError(f"label arrays must be one-dimensional, got shape {array.shape}")
    return array


def paired(a: Any, b: Any) -> tuple[FloatArray, FloatArray]:
    """Both arrays, restricted to the items where both labels are present."""
    x, y = as_labels(a), as_labels(b)
    if x.shape != y.shape:
        raise ValueError(f"label arrays differ in length: {x.size} and {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def label_space(labels: Any, *observed: FloatArray) -> FloatArray:
    """``labels`` as given (order kept), or the sorted values seen in ``observed``."""
    if labels is not None:
        return np.asarray(labels, dtype=float).ravel()
    if not observed:
        return np.empty(0)
    return np.unique(np.concatenate(observed))


def _codes(values: FloatArray, labels: FloatArray) -> npt.NDArray[np.intp]:
    """Position of each value in ``labels`` (which need not be sorted), -1 when absent."""
    if labels.size == 0:
        return np.full(values.shape, -1, dtype=np.intp)
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    pos = np.clip(np.searchsorted(ordered, values), 0, ordered.size - 1)
    return np.where(ordered[pos] == values, order[pos], -1)


def query_codes(query_ids: Any, n: int) -> tuple[npt.NDArray[np.intp], int]:
    """Dense query codes 0..Q-1 and Q. Codes follow the sorted order of the ids, so a
    bootstrap over the same labels gives the same interval whatever the order of rows."""
    ids = np.asarray(query_ids)
    if ids.shape != (n,):
        raise ValueError(f"query_ids has {ids.size} entries for {n} labels")
    try:
        codes, uniques = pd.factorize(ids, sort=True)
    except TypeError:  # ids that cannot be ordered (mixed types): first-seen order
        codes, uniques = pd.factorize(ids)
    return codes.astype(np.intp), len(uniques)


def confusion_tables(
    a: FloatArray,
    b: FloatArray,
    labels: FloatArray,
    groups: npt.NDArray[np.intp] | None = None,
    n_groups: int = 1,
) -> FloatArray:
    """Contingency tables (rows: ``a``'s label, columns: ``b``'s), one per group.

    Items with a missing label, or a label outside ``labels``, are left out.
    Shape ``(n_groups, k, k)``.
    """
    k = labels.size
    keep = ~(np.isnan(a) | np.isnan(b))
    ia, ib = _codes(a[keep], labels), _codes(b[keep], labels)
    ok = (ia >= 0) & (ib >= 0)
    cell = ia[ok] * k + ib[ok]
    if groups is not None:
        cell = groups[keep][ok] * (k * k) + cell
    counts = np.bincount(cell, minlength=n_groups * k * k)
    return counts.reshape(n_groups, k, k).astype(np.float64)


def consensus(labels_by_annotator: Mapping[str, Any]) -> FloatArray:
    """One grade per item from several annotators: the median of the grades given.

    With an even number of grades the two middle ones may differ; the lower one is taken
    (the more conservative grade), so the consensus is always a grade somebody gave and
    never a half grade. Missing grades are ignored; an item nobody graded gets ``nan``.
    Deterministic and independent of annotator order.
    """
    if not labels_by_annotator:
        raise ValueError("consensus needs at least one annotator")
    arrays = [as_labels(v) for v in labels_by_annotator.values()]
    sizes = {a.size for a in arrays}
    if len(sizes) != 1:
        raise ValueError(f"annotators' label arrays differ in length: {sorted(sizes)}")
    stacked = np.sort(np.vstack(arrays), axis=0)  # nan sorts last
    given = (~np.isnan(stacked)).sum(axis=0)
    lower_middle = np.maximum(given - 1, 0) // 2
    out = np.take_along_axis(stacked, lower_middle[None, :], axis=0)[0]
    out[given == 0] = np.nan
    return out
