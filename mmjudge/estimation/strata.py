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
a top ten, too few to tune a weight on. Those are split in two parts instead, the system's top
tens and the rest (:func:`split_by_top_ten`), with a t interval for the few labelled items a
top-ten part holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.labels import FloatArray

#: The fewest labelled items each query needs before the means are estimated per query.
MIN_LABELLED_PER_QUERY = 40

#: The columns estimated per query when :func:`usable` allows it.
COLUMNS = ("mean grade", "share relevant")

#: The PPI++ weight per column from ``(y, yhat, yhat_rest, w)``
#: (:func:`mmjudge.estimation.prediction.tuned_weights`).
Tune = Callable[[FloatArray, FloatArray, FloatArray, FloatArray | None], FloatArray]


class Stratified(NamedTuple):
    """Per column: the combined estimate and interval, the item-weighted mean of the
    queries' tuned weights, and the human-only estimate and interval stratified the same
    way (each query's classical interval, ``lam=0``), so that what the judge adds is told
    apart from what the stratification adds."""

    point: FloatArray
    low: FloatArray
    high: FloatArray
    lam: FloatArray
    human_point: FloatArray
    human_low: FloatArray
    human_high: FloatArray
    se: FloatArray
    """The standard error of the combined PPI++ estimate (its half-width over ``z``)."""
    human_se: FloatArray
    """The same of the combined human-only estimate."""
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
    from scipy import stats

    y, yhat, yhat_rest = columns
    n_strata = int(codes.max()) + 1
    at_lab, at_rest = codes[labelled], codes[~labelled]
    point, square, lam = (np.zeros(y.shape[1]) for _ in range(3))
    human, human_square = np.zeros(y.shape[1]), np.zeros(y.shape[1])
    for q in range(n_strata):
        mine, theirs = at_lab == q, at_rest == q
        share = (mine.sum() + theirs.sum()) / codes.size
        part = (y[mine], yhat[mine], yhat_rest[theirs])
        centre, half, weight = _one_stratum(ppi_py, tune, *part, alpha)
        point += share * centre
        square += (share * half) ** 2
        lam += share * weight
        c_low, c_high = ppi_py.ppi_mean_ci(*part, alpha=alpha, lam=0)
        human += share * part[0].mean(axis=0)
        human_square += (share * (np.ravel(c_high) - np.ravel(c_low)) / 2) ** 2
    spread, human_spread = np.sqrt(square), np.sqrt(human_square)
    z = float(stats.norm.ppf(1 - alpha / 2))
    return Stratified(
        point,
        point - spread,
        point + spread,
        lam,
        human,
        human - human_spread,
        human + human_spread,
        spread / z,
        human_spread / z,
        n_strata,
    )


def _one_stratum(
    ppi_py: Any,
    tune: Tune,
    y: FloatArray,
    yhat: FloatArray,
    rest: FloatArray,
    alpha: float,
    w: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """One stratum's estimate, half-width and weight per column (the labelled items weighed
    by ``w`` when given); a column whose judge values do not vary in the stratum (no weight
    can be tuned) takes the human labels alone."""
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = np.ravel(
            ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam_optim_mode="element", w=w)
        )
        low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam_optim_mode="element", w=w)
        weight = tune(y, yhat, rest, w)
    low, high = np.ravel(low), np.ravel(high)
    flat = ~(np.isfinite(centre) & np.isfinite(low) & np.isfinite(high))
    if flat.any():
        c_low, c_high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=0, w=w)
        centre = np.where(flat, _weighted_mean(y, w), centre)
        low = np.where(flat, np.ravel(c_low), low)
        high = np.where(flat, np.ravel(c_high), high)
        weight = np.where(flat, 0.0, weight)
    return centre, (high - low) / 2, weight


def _weighted_mean(y: FloatArray, w: FloatArray | None) -> FloatArray:
    """Per column, the mean of ``y`` with each row weighed by ``w`` (equally without)."""
    return y.mean(axis=0) if w is None else (w[:, None] * y).sum(axis=0) / w.sum()


#: The fewest labelled, and unlabelled, items each of a system column's two parts (its top
#: tens, the rest) needs before the column is estimated in the two parts apart.
MIN_PER_PART = 2


class TopTenSplit(NamedTuple):
    """Per column: the prediction-powered and the human-only estimates and intervals from
    the two parts, and the weight (NaN where the column was not split); which were split."""

    point: FloatArray
    low: FloatArray
    high: FloatArray
    lam: FloatArray
    """The weight tuned in the top tens (reported): there the judge's labels count; outside
    them a P@10 column is zero throughout and has no weight to tune."""
    human_point: FloatArray
    human_low: FloatArray
    human_high: FloatArray
    se: FloatArray
    """The standard error of the combined PPI++ estimate (before the t quantile)."""
    human_se: FloatArray
    """The same of the combined human-only estimate."""
    split: npt.NDArray[np.bool_]


def split_by_top_ten(
    ppi_py: Any,
    tune: Tune,
    columns: tuple[FloatArray, FloatArray, FloatArray],
    inside: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]],
    alpha: float,
    w: FloatArray | None = None,
) -> TopTenSplit:
    """Each system column estimated in its top tens and outside them apart, and the two
    parts combined with a t interval; human-only alike. ``inside`` marks, for the labelled
    items and for the items ``columns[2]`` holds the judge on (the unlabelled ones, or every
    item when the labelled ones were drawn with unequal chances), which are in the top tens
    of each column's system (items × columns; no item marked: not a system column). ``w``
    weighs the labelled items (one over each one's inclusion probability) when given.

    Why: a system's column is zero, or nearly, outside its top tens, and a random draw puts
    a varying few labelled items into them (about 11 of 200 on the LLMJudge files). Pooled,
    that varying count is noise in the estimate, and the normal interval comes out too
    narrow when the count is small. Split, each part's mean is estimated from its own
    labelled items as :func:`stratified_means` does for a query (PPI++, the weight tuned in
    the part; ``lam=0`` for human-only), the parts weighted by their share of the items.
    Each part's standard error is taken with ``m − 1`` for its ``m`` labelled items
    (``ppi_mean_ci`` divides by ``m``), and the interval is Student's t with the
    Welch–Satterthwaite degrees of freedom of the two parts, each counted with ``m − 1``;
    with weights, ``m`` is the part's effective number of labelled items, ``(Σw)² / Σw²``.
    A column is split only when both parts have :data:`MIN_PER_PART` labelled and
    unlabelled items."""
    from scipy import stats

    y, yhat, rest = columns
    at_lab, at_rest = inside
    width = y.shape[1]
    found = [np.full(width, np.nan) for _ in range(9)]
    split = np.zeros(width, dtype=bool)
    for k in range(width):
        if not at_rest[:, k].any() or not _parts_usable(at_lab[:, k], at_rest[:, k], w):
            continue
        column = (y[:, [k]], yhat[:, [k]], rest[:, [k]])
        ppi_parts, human_parts, lam = _two_parts(
            ppi_py, tune, column, (at_lab[:, k], at_rest[:, k]), alpha, w
        )
        for at, se_at, parts in ((0, 7, ppi_parts), (4, 8, human_parts)):
            middle, spread, error = _t_combined(parts, alpha, stats)
            found[at][k], found[at + 1][k] = middle, middle - spread
            found[at + 2][k], found[se_at][k] = middle + spread, error
        found[3][k], split[k] = lam, True
    point, low, high, top_lam, human_point, human_low, human_high, se, human_se = found
    return TopTenSplit(
        point, low, high, top_lam, human_point, human_low, human_high, se, human_se, split
    )


#: One part of a column: (its share of the items, its estimate, its standard error with
#: ``m`` dividing, ``m`` its number of labelled items).
Part = tuple[float, float, float, float]


def _two_parts(
    ppi_py: Any,
    tune: Tune,
    column: tuple[FloatArray, FloatArray, FloatArray],
    inside: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]],
    alpha: float,
    w: FloatArray | None,
) -> tuple[list[Part], list[Part], float]:
    """One column's top-ten part and the rest, PPI++ and human-only (:data:`Part` each), and
    the weight tuned in the top tens; ``column`` is ``(y, yhat, rest)`` of that column alone,
    ``inside`` marks its labelled items and its ``rest`` items in the top tens."""
    from scipy import stats

    y, yhat, rest = column
    at_lab, at_rest = inside
    normal = float(stats.norm.ppf(1 - alpha / 2))
    ppi_parts, human_parts, lam = [], [], 0.0
    for number, (lab, unlab) in enumerate(((at_lab, at_rest), (~at_lab, ~at_rest))):
        share = _share(lab, unlab, at_lab, at_rest, w)
        part = (y[lab], yhat[lab], rest[unlab])
        mine = None if w is None else w[lab]
        centre, half, weight = _one_stratum(ppi_py, tune, *part, alpha, mine)
        h_low, h_high = ppi_py.ppi_mean_ci(*part, alpha=alpha, lam=0, w=mine)
        human_half = (float(np.ravel(h_high)[0]) - float(np.ravel(h_low)[0])) / 2
        m = _effective(mine, int(lab.sum()))
        ppi_parts.append((share, float(centre[0]), float(half[0]) / normal, m))
        human_mean = float(_weighted_mean(part[0], mine)[0])
        human_parts.append((share, human_mean, human_half / normal, m))
        if number == 0:
            lam = float(weight[0])
    return ppi_parts, human_parts, lam


def _share(
    lab: npt.NDArray[np.bool_],
    unlab: npt.NDArray[np.bool_],
    all_lab: npt.NDArray[np.bool_],
    all_rest: npt.NDArray[np.bool_],
    w: FloatArray | None,
) -> float:
    """A part's share of the items: of labelled and unlabelled items together with equal
    chances; of every item (which ``unlab`` then covers) with weights."""
    if w is None:
        return float((lab.sum() + unlab.sum()) / (all_lab.size + all_rest.size))
    return float(unlab.sum() / all_rest.size)


def _effective(w: FloatArray | None, m: int) -> float:
    """The number of labelled items a part counts as: ``m``, or Kish's ``(Σw)² / Σw²``."""
    if w is None or m == 0:
        return float(m)
    return float(w.sum() ** 2 / (w**2).sum())


def _t_combined(parts: list[Part], alpha: float, stats: Any) -> tuple[float, float, float]:
    """The share-weighted estimate of parts ``(share, estimate, standard error with m
    dividing, m)``, its t half-width (Welch–Satterthwaite degrees of freedom) and its
    standard error (with ``m − 1``)."""
    centre = sum(share * mean for share, mean, _, _ in parts)
    pieces = [((share * se) ** 2 * m / (m - 1), m - 1) for share, _, se, m in parts]
    variance = sum(v for v, _ in pieces)
    if variance <= 0:
        return centre, 0.0, 0.0
    freedom = variance**2 / sum(v * v / df for v, df in pieces)
    se = float(np.sqrt(variance))
    return centre, float(stats.t.ppf(1 - alpha / 2, freedom)) * se, se


def _parts_usable(
    labelled_inside: npt.NDArray[np.bool_],
    rest_inside: npt.NDArray[np.bool_],
    w: FloatArray | None,
) -> bool:
    """Both parts have :data:`MIN_PER_PART` labelled items (effective ones, with weights)
    and as many items to impute on."""
    labelled = [
        _effective(None if w is None else w[part], int(part.sum()))
        for part in (labelled_inside, ~labelled_inside)
    ]
    return min(*labelled, rest_inside.sum(), (~rest_inside).sum()) >= MIN_PER_PART
