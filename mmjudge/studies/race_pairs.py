"""κ on a race's prefixes and the intervals of paired differences (see
:mod:`mmjudge.studies.race_rule` for the rule they serve).

Grades come in race order, encoded as positions on the scale (−1: no grade, or a grade off
the scale). A cell's κ is the project's (:func:`mmjudge.metrics.scoring.score_judge`:
unweighted Cohen's κ against the reference, on the items with both grades on the scale);
a pair's difference is on the items both graded within the shorter of the two prefixes,
with its delete-one-item jackknife standard error in closed form and the finite-population
correction of a sample drawn without replacement.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.kappa import kappa_from_tables

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def grade_codes(grades: FloatArray, scale: Sequence[float]) -> IntArray:
    """Each grade's position on ``scale``; −1 for no grade or a grade off the scale (an item
    the project's κ leaves out)."""
    values = np.asarray(grades, dtype=np.float64)
    grid = np.asarray(sorted(float(g) for g in scale))
    at = np.clip(np.searchsorted(grid, values), 0, max(grid.size - 1, 0))
    on_scale = grid[at] == values if grid.size else np.zeros(values.shape, dtype=bool)
    return np.where(on_scale, at, -1).astype(np.int64)


def own_kappas(reference: IntArray, codes: IntArray, prefixes: IntArray, k: int) -> FloatArray:
    """Each cell's κ against the reference on the items it graded within its prefix
    (``reference``: codes ``(N,)``, ``codes``: ``(K, N)``, both in race order)."""
    n_cells, n_items = codes.shape
    inside = np.arange(n_items)[None, :] < prefixes[:, None]
    valid = inside & (codes >= 0) & (reference[None, :] >= 0)
    flat = np.arange(n_cells)[:, None] * k * k + reference[None, :] * k + codes
    counts = np.bincount(flat[valid], minlength=n_cells * k * k).reshape(n_cells, k, k)
    return kappa_from_tables(counts.astype(np.float64), None, math.nan)


class PairStats(NamedTuple):
    """Every pair's κ difference on the items both graded, with its jackknife error."""

    first: IntArray
    """Cell i of each pair (i < j)."""
    second: IntArray
    """Cell j of each pair."""
    difference: FloatArray
    """κ_i − κ_j on the pair's items."""
    se: FloatArray
    """Delete-one-item jackknife standard error of the difference (``nan`` when undefined)."""
    n_items: IntArray
    """Items both graded within the shorter prefix (and with a reference grade)."""
    drawn: IntArray
    """The shorter prefix: items drawn for the pair."""


def _leave_one_out(tables: FloatArray) -> FloatArray:
    """κ of each table ``(P, k, k)`` with one item of cell (r, a) removed: ``(P, k, k)``."""
    k = tables.shape[-1]
    one = np.eye(k * k).reshape(k, k, k, k)
    return kappa_from_tables(tables[:, None, None, :, :] - one[None], None, math.nan)


def pair_stats(reference: IntArray, codes: IntArray, prefixes: IntArray, k: int) -> PairStats:
    """κ_i − κ_j and its jackknife standard error for every pair of cells, vectorised.

    The counts of (reference, judge i, judge j) grades on the pair's items decide everything:
    deleting one item with grades (r, a, b) gives κ_i of table T_i − e_ra and κ_j of T_j − e_rb,
    so the jackknife variance ``(n−1)/n · Σ_items (Δ_(−item) − mean)²`` is a weighted sum over
    the k³ grade triples, with no loop over items.
    """
    n_cells = codes.shape[0]
    pairs = np.asarray(list(itertools.combinations(range(n_cells), 2)), dtype=np.int64)
    first, second = pairs.reshape(-1, 2).T
    n_pairs = first.size
    drawn = np.minimum(prefixes[first], prefixes[second])
    width = int(drawn.max(initial=0))
    reference, codes = reference[:width], codes[:, :width]
    inside = np.arange(width)[None, :] < drawn[:, None]
    a, b = codes[first], codes[second]
    valid = inside & (a >= 0) & (b >= 0) & (reference[None, :] >= 0)
    triple = (np.arange(n_pairs)[:, None] * k + reference[None, :]) * k * k + a * k + b
    counts = np.bincount(triple[valid], minlength=n_pairs * k**3).reshape(n_pairs, k, k, k)
    counts = counts.astype(np.float64)
    table_i, table_j = counts.sum(axis=3), counts.sum(axis=2)
    difference = kappa_from_tables(table_i, None, math.nan) - kappa_from_tables(
        table_j, None, math.nan
    )
    loo = _leave_one_out(table_i)[:, :, :, None] - _leave_one_out(table_j)[:, :, None, :]
    n = counts.sum(axis=(1, 2, 3))
    used = counts > 0
    undefined = (used & ~np.isfinite(loo)).any(axis=(1, 2, 3))
    loo = np.where(used, loo, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (counts * loo).sum(axis=(1, 2, 3)) / n
        spread = (counts * (loo - mean[:, None, None, None]) ** 2).sum(axis=(1, 2, 3))
        se = np.sqrt((n - 1) / n * spread)
    se = np.where(undefined | (n < 2), math.nan, se)
    return PairStats(first, second, difference, se, n.astype(np.int64), drawn.astype(np.int64))


def half_widths(stats: PairStats, z: float | FloatArray, population: int) -> FloatArray:
    """Half-width of each pair's interval: z · se · sqrt(1 − m/N) (``z`` one for all pairs, or
    each pair's own); zero at m = N, infinite where the difference or its error is
    undefined."""
    fpc = np.sqrt(np.clip(1.0 - stats.drawn / population, 0.0, 1.0))
    with np.errstate(invalid="ignore"):
        width = z * stats.se * fpc
    width = np.where(fpc == 0.0, 0.0, width)
    known = np.isfinite(stats.difference) & np.isfinite(width)
    return np.where(known, width, math.inf)
