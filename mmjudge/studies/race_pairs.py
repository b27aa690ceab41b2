"""κ on a race's prefixes and the intervals of paired differences (see
:mod:`mmjudge.studies.race_rule` for the rule they serve).

Grades come in race order, encoded as positions on the scale (−1: no grade, or a grade off
the scale). A cell's κ is the project's (:func:`mmjudge.metrics.scoring.score_judge`:
unweighted Cohen's κ against the reference, on the items with both grades on the scale);
a pair's difference is on the items both graded within the shorter of the two prefixes,
with its delete-one-item jackknife standard error in closed form, a bound on what the
disagreements a sample this size may have missed add to it, and — only where the race's
target is the items themselves — the finite-population correction of a sample drawn without
replacement.

**Disagreements not seen.** Two judges that grade almost every item alike differ only on
the items where their grades differ (the *disagreements*): on the others both κ move
together. When a prefix holds none, the two confusion tables are the same, every
leave-one-out difference is 0 and the jackknife says the difference is known exactly,
whatever the prefix's size; with a handful it is as unreliable as any variance from a
handful of cases (the same pathology as an estimate from a handful of labels). So the
variance used adds, to the jackknife's sum of squared influences, the disagreements a sample
of ``n`` items with none in it could still be hiding — ``n · p⁺``, with ``p⁺ = 1 − γ^(1/n)``
the exact (Clopper–Pearson) upper confidence bound of a disagreement rate when none is seen,
about ``ln(1/γ)`` of them — each at the largest influence one could have, ``h`` (the change
one more disagreeing item, any reference grade and any two different grades, would make to
the difference, times ``n``):

    se² = se_jackknife² + h² · n·p⁺ / n²

While few disagreements are seen this term decides the width, and a pair of near-tied judges
is not settled before its prefix could have shown how far apart they are; once many are seen
it is a vanishing share of the jackknife's (it falls as one over n², the jackknife's as one
over n), so judges that disagree often pay almost nothing for it. (Counting the unseen
disagreements from the upper bound of the observed rate instead, ``n·p⁺(d) − d``, protects
little more while disagreements are few, and charges judges that disagree often about
``z_γ·√d`` disagreements at ``h²``, several times a typical one's squared influence: with
``race.target=items`` on LLMJudge it spent 39% of the grid's judgments at equal prices,
against 33% with the term above.)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from scipy.special import betaincinv

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


def _own_tables(reference: IntArray, codes: IntArray, prefixes: IntArray, k: int) -> FloatArray:
    """Each cell's confusion table (reference × judge) on the items it graded within its
    prefix: ``(K, k, k)``."""
    n_cells, n_items = codes.shape
    inside = np.arange(n_items)[None, :] < prefixes[:, None]
    valid = inside & (codes >= 0) & (reference[None, :] >= 0)
    flat = np.arange(n_cells)[:, None] * k * k + reference[None, :] * k + codes
    counts = np.bincount(flat[valid], minlength=n_cells * k * k).reshape(n_cells, k, k)
    return counts.astype(np.float64)


def own_kappas(reference: IntArray, codes: IntArray, prefixes: IntArray, k: int) -> FloatArray:
    """Each cell's κ against the reference on the items it graded within its prefix
    (``reference``: codes ``(N,)``, ``codes``: ``(K, N)``, both in race order)."""
    return kappa_from_tables(_own_tables(reference, codes, prefixes, k), None, math.nan)


class OwnStats(NamedTuple):
    """Each cell's κ on the items it graded within its prefix, with its jackknife error."""

    kappa: FloatArray
    """κ̂ of each cell (``nan`` where undefined)."""
    se: FloatArray
    """Delete-one-item jackknife standard error of κ̂ (``nan`` where undefined)."""
    n_items: IntArray
    """Items the cell graded within its prefix (with a reference grade)."""


def own_stats(reference: IntArray, codes: IntArray, prefixes: IntArray, k: int) -> OwnStats:
    """Each cell's κ̂ on its prefix with its delete-one-item jackknife standard error, in
    closed form from its confusion table (deleting an item of cell (r, a) gives the κ of
    T − e_ra), as :func:`pair_stats` does for a difference."""
    counts = _own_tables(reference, codes, prefixes, k)
    kappa = kappa_from_tables(counts, None, math.nan)
    one = np.eye(k * k).reshape(k, k, k, k)
    loo = kappa_from_tables(counts[:, None, None] - one, None, math.nan)
    n = counts.sum(axis=(1, 2))
    used = counts > 0
    undefined = (used & ~np.isfinite(loo)).any(axis=(1, 2))
    loo = np.where(used, loo, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (counts * loo).sum(axis=(1, 2)) / n
        spread = (counts * (loo - mean[:, None, None]) ** 2).sum(axis=(1, 2))
        se = np.sqrt((n - 1) / n * spread)
    se = np.where(undefined | (n < 2), math.nan, se)
    return OwnStats(kappa, se, n.astype(np.int64))


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
    disagreements: IntArray
    """Items of the pair the two judges graded differently."""
    influence: FloatArray
    """The largest change one more disagreeing item would make to the difference, times
    the pair's items (``nan`` where a κ is undefined)."""


class _Moved(NamedTuple):
    """κ of each judge's table as it is, with one item of each cell (r, a) removed, and with
    one more: ``(2, P)``, ``(2, P, k, k)``, ``(2, P, k, k)`` for judges i and j of P pairs."""

    kappa: FloatArray
    removed: FloatArray
    added: FloatArray


def _moved(tables: FloatArray) -> _Moved:
    """:class:`_Moved` of ``tables`` ``(2, P, k, k)``, in one evaluation of κ."""
    k = tables.shape[-1]
    one = np.eye(k * k).reshape(k, k, k, k)
    stack = np.stack(
        [
            np.broadcast_to(tables[:, :, None, None], (*tables.shape[:2], k, k, k, k)),
            tables[:, :, None, None] - one,
            tables[:, :, None, None] + one,
        ]
    )
    kappas = kappa_from_tables(stack, None, math.nan)
    return _Moved(kappas[0, :, :, 0, 0], kappas[1], kappas[2])


def _largest_influence(moved: _Moved, n: FloatArray) -> FloatArray:
    """For each pair, ``n`` times the largest change to κ_i − κ_j that one more item graded
    (r, a) by judge i and (r, b) by judge j, a ≠ b, would make."""
    k = moved.added.shape[-1]
    shift = moved.added - moved.kappa[:, :, None, None]  # (2, P, r, a)
    change = shift[0][:, :, :, None] - shift[1][:, :, None, :]  # (P, r, a, b)
    differ = ~np.eye(k, dtype=bool)[None, None, :, :]
    with np.errstate(invalid="ignore"):
        largest = np.max(np.where(differ, np.abs(change), 0.0), axis=(1, 2, 3))
    undefined = ~np.isfinite(change).all(axis=(1, 2, 3))
    return np.where(undefined, math.nan, largest * n)


def disagreement_influence(tables: FloatArray, n: FloatArray) -> FloatArray:
    """For each pair of judges' tables ``(2, P, k, k)`` (person × judge), ``n`` times the
    largest change to κ_i − κ_j one more item graded differently by the two would make
    (``nan`` where a κ is undefined): :attr:`PairStats.influence` from any tables."""
    return _largest_influence(_moved(tables), n)


def pair_stats(reference: IntArray, codes: IntArray, prefixes: IntArray, k: int) -> PairStats:
    """κ_i − κ_j and its jackknife standard error for every pair of cells, vectorised.

    The counts of (reference, judge i, judge j) grades on the pair's items decide everything:
    deleting one item with grades (r, a, b) gives κ_i of table T_i − e_ra and κ_j of T_j − e_rb,
    so the jackknife variance ``(n−1)/n · Σ_items (Δ_(−item) − mean)²`` is a weighted sum over
    the k³ grade triples, with no loop over items; adding one gives the largest influence a
    disagreement could have.
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
    moved = _moved(np.stack([counts.sum(axis=3), counts.sum(axis=2)]))
    difference = moved.kappa[0] - moved.kappa[1]
    loo = moved.removed[0][:, :, :, None] - moved.removed[1][:, :, None, :]
    n = counts.sum(axis=(1, 2, 3))
    used = counts > 0
    undefined = (used & ~np.isfinite(loo)).any(axis=(1, 2, 3))
    loo = np.where(used, loo, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (counts * loo).sum(axis=(1, 2, 3)) / n
        spread = (counts * (loo - mean[:, None, None, None]) ** 2).sum(axis=(1, 2, 3))
        se = np.sqrt((n - 1) / n * spread)
    se = np.where(undefined | (n < 2), math.nan, se)
    same = np.eye(k, dtype=bool)[None, None, :, :]
    disagreements = np.where(same, 0.0, counts).sum(axis=(1, 2, 3))
    return PairStats(
        first,
        second,
        difference,
        se,
        n.astype(np.int64),
        drawn.astype(np.int64),
        disagreements.astype(np.int64),
        _largest_influence(moved, n),
    )


def disagreement_bound(
    disagreements: IntArray, n_items: IntArray, level: float | FloatArray
) -> FloatArray:
    """The exact (Clopper–Pearson) upper confidence bound of the disagreement rate, at
    confidence ``1 − level``, from ``disagreements`` of ``n_items`` (1 where there are no
    items)."""
    d = np.asarray(disagreements, dtype=np.float64)
    n = np.asarray(n_items, dtype=np.float64)
    inside = d < n
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = betaincinv(d + 1.0, np.where(inside, n - d, 1.0), 1.0 - np.asarray(level))
    return np.where(inside, bound, 1.0)


def bounded_se(stats: PairStats, level: float | FloatArray) -> FloatArray:
    """The standard error each pair's interval uses: the jackknife's with what the
    disagreements a sample with none may hide could add (see the module docstring), their
    count bounded at confidence ``1 − level`` (one for all pairs, or each pair's own)."""
    n = stats.n_items.astype(np.float64)
    unseen = disagreement_bound(np.zeros_like(stats.n_items), stats.n_items, level) * n
    with np.errstate(invalid="ignore", divide="ignore"):
        extra = stats.influence**2 * unseen / n**2
        return np.sqrt(stats.se**2 + extra)


def half_widths(
    stats: PairStats,
    z: float | FloatArray,
    level: float | FloatArray,
    *,
    n_items: int | None = None,
) -> FloatArray:
    """Half-width of each pair's interval: z · se (``z`` and the disagreement bound's
    ``level`` one for all pairs, or each pair's own; se from :func:`bounded_se`), infinite
    where the difference or its error is undefined. With ``n_items`` (the race's target is
    these ``N`` items themselves, not the population they were drawn from) times the
    finite-population correction sqrt(1 − m/N): zero at m = N."""
    se = bounded_se(stats, level)
    if n_items is None:
        fpc = np.ones(stats.drawn.shape)
    else:
        fpc = np.sqrt(np.clip(1.0 - stats.drawn / n_items, 0.0, 1.0))
    with np.errstate(invalid="ignore"):
        width = z * se * fpc
    width = np.where(fpc == 0.0, 0.0, width)
    known = np.isfinite(stats.difference) & np.isfinite(width)
    return np.where(known, width, math.inf)
