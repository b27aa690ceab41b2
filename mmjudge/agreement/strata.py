"""Prediction-powered means stratified by query: PPI++ within each query, the queries'
estimates weighted by their share of the items.

A judge follows the humans better on some queries than on others, and the queries' mean
grades differ. Estimating within each query takes both out of the interval: each query has
its own weight on the judge, tuned from its own labelled items, and the spread between
queries no longer counts as noise. ``ppi_py`` has no stratified estimator, so each query's
estimate and interval come from ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci``
(weight tuned per column) and are combined here: the estimate is ``Σ_q w_q · θ_q`` and the
interval's half-width ``√(Σ_q (w_q · h_q)²)``, ``w_q`` the query's share of all items and
``h_q`` the half-width of its own interval (the queries' labelled items are independent, and
every interval is the estimate ± the same normal quantile times its standard error).

A weight tuned on a handful of items fits them and makes the interval too narrow: with about
20 labelled items a query the per-query intervals of the LLMJudge files held the truth in 92%
of draws. The rule (:func:`usable`) is therefore fixed in advance, not chosen by which interval
comes out narrower: stratify only when every query has at least
:data:`MIN_LABELLED_PER_QUERY` labelled items and 2 unlabelled ones, the labelled items were
drawn with equal chances, and there are at least two queries. It applies to the means over
items of :data:`COLUMNS`; a system's P@10 and nDCG@10 have about one labelled item a query in
a top ten, too few to tune a weight on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.agreement.labels import FloatArray

#: The fewest labelled items each query needs before the means are estimated per query.
MIN_LABELLED_PER_QUERY = 40

#: The columns estimated per query when :func:`usable` allows it.
COLUMNS = ("mean grade", "share relevant")

Tune = Callable[[FloatArray, FloatArray, FloatArray], FloatArray]


class Stratified(NamedTuple):
    """Per column: the combined estimate and interval, and the item-weighted mean of the
    queries' tuned weights."""

    point: FloatArray
    low: FloatArray
    high: FloatArray
    lam: FloatArray
    strata: int
    """How many queries were estimated apart."""


def usable(codes: npt.NDArray[np.intp], labelled: npt.NDArray[np.bool_], n_strata: int) -> bool:
    """Whether the means may be estimated per query: two queries or more, each with at least
    :data:`MIN_LABELLED_PER_QUERY` labelled and 2 unlabelled items."""
    if n_strata < 2:
        return False
    done = np.bincount(codes[labelled], minlength=n_strata)
    left = np.bincount(codes[~labelled], minlength=n_strata)
    return bool((done >= MIN_LABELLED_PER_QUERY).all() and (left >= 2).all())


def stratified_means(
    ppi_py: Any,
    tune: Tune,
    columns: tuple[FloatArray, FloatArray, FloatArray],
    codes: npt.NDArray[np.intp],
    labelled: npt.NDArray[np.bool_],
    alpha: float,
) -> Stratified:
    """PPI++ per query, combined. ``columns`` are ``(y, yhat, yhat_rest)``: the labelled
    items' human and judge columns (in item order, ``codes[labelled]`` their queries) and the
    unlabelled items' judge columns (``codes[~labelled]``); ``tune`` gives the weight PPI++
    tunes per column (reported)."""
    y, yhat, yhat_rest = columns
    n_strata = int(codes.max()) + 1
    at_lab, at_rest = codes[labelled], codes[~labelled]
    point = np.zeros(y.shape[1])
    square = np.zeros(y.shape[1])
    lam = np.zeros(y.shape[1])
    for q in range(n_strata):
        mine, theirs = at_lab == q, at_rest == q
        share = (mine.sum() + theirs.sum()) / codes.size
        centre, half, weight = _one_stratum(
            ppi_py, tune, y[mine], yhat[mine], yhat_rest[theirs], alpha
        )
        point += share * centre
        square += (share * half) ** 2
        lam += share * weight
    spread = np.sqrt(square)
    return Stratified(point, point - spread, point + spread, lam, n_strata)


def _one_stratum(
    ppi_py: Any, tune: Tune, y: FloatArray, yhat: FloatArray, rest: FloatArray, alpha: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """One query's estimate, half-width and weight per column; a column whose judge values
    do not vary in the query (no weight can be tuned) takes the human labels alone."""
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam_optim_mode="element"))
        low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam_optim_mode="element")
        weight = tune(y, yhat, rest)
    low, high = np.ravel(low), np.ravel(high)
    flat = ~(np.isfinite(centre) & np.isfinite(low) & np.isfinite(high))
    if flat.any():
        c_low, c_high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=0)
        centre = np.where(flat, y.mean(axis=0), centre)
        low = np.where(flat, np.ravel(c_low), low)
        high = np.where(flat, np.ravel(c_high), high)
        weight = np.where(flat, 0.0, weight)
    return centre, (high - low) / 2, weight
