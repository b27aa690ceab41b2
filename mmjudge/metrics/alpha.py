"""Krippendorff's α over any number of raters, with missing labels."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mmjudge.metrics.labels import FloatArray, Level, as_labels


def krippendorff_alpha(reliability: Any, level: Level = "ordinal") -> float:
    """Krippendorff's α for a raters × items matrix (``nan``/``None`` = not rated).

    Built from the coincidence matrix: every item rated by m ≥ 2 raters adds each ordered
    pair of its ratings (from different raters) with weight 1/(m − 1). α = 1 − D_o/D_e with
    the difference function of ``level`` (nominal, ordinal, interval, ratio); the ordinal
    difference uses the marginal totals of the coincidence matrix, as Krippendorff defines it.
    Returns ``nan`` when fewer than two distinct values or no item with two ratings exist
    (the ``krippendorff`` package raises in those cases).
    """
    data = _matrix(reliability)
    if data.ndim != 2:
        raise ValueError(f"reliability data must be raters × items, got shape {data.shape}")
    present = ~np.isnan(data)
    values = np.unique(data[present])
    v = values.size
    if v < 2:
        return math.nan
    items = np.broadcast_to(np.arange(data.shape[1]), data.shape)[present]
    codes = np.searchsorted(values, data[present])
    counts = np.bincount(items * v + codes, minlength=data.shape[1] * v).reshape(-1, v)
    m = counts.sum(axis=1)
    pairable = m >= 2
    if not pairable.any():
        return math.nan
    counts = counts[pairable].astype(np.float64)
    scaled = counts / (m[pairable] - 1.0)[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    n_c = coincidence.sum(axis=0)
    n = n_c.sum()
    delta = _alpha_distance(values, n_c, level)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected == 0:
        return math.nan
    return float(1.0 - (n - 1.0) * (coincidence * delta).sum() / expected)


def _matrix(reliability: Any) -> FloatArray:
    """A raters × items float matrix with ``nan`` for every missing rating."""
    if hasattr(reliability, "to_numpy"):
        return np.asarray(reliability.to_numpy(dtype=float, na_value=np.nan), dtype=float)
    try:
        return np.asarray(reliability, dtype=float)
    except TypeError:  # pd.NA inside nested lists
        return np.vstack([as_labels(row) for row in reliability])


def _alpha_distance(values: FloatArray, n_c: FloatArray, level: Level) -> FloatArray:
    if level == "nominal":
        return 1.0 - np.eye(values.size)
    if level == "ordinal":
        cum = np.cumsum(n_c)
        lo = np.minimum.outer(np.arange(values.size), np.arange(values.size))
        hi = np.maximum.outer(np.arange(values.size), np.arange(values.size))
        between = cum[hi] - cum[lo] + n_c[lo]
        return (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ratio":
        total = values[:, None] + values[None, :]
        diff = values[:, None] - values[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total != 0, (diff / total) ** 2, 0.0)
    raise ValueError(f"level must be nominal, ordinal, interval or ratio, got {level!r}")
