"""Intervals for the mean grade and the share of relevant items that stay honest however
few items are labelled: two pseudo-items, one at each end of the scale.

With a handful of labelled items the plain intervals fail in three ways (measured on the
LLMJudge files, docs/estimates.md): the normal interval of a skewed grade is too narrow; when
the labelled grades happen to be equal (20 items, none relevant) the human-only interval has
no width at all; and when the judge happens to agree with every labelled item, PPI++ puts
its whole weight on the judge and estimates the rectifier's variance as zero, so the interval
shrinks onto the judge's own value (share relevant 0.020 [0.015, 0.025] from 10 labels, truth
0.268). A sample of ten items that shows no error cannot tell a judge that errs on a quarter
of the items from one that never errs.

The fix is Agresti and Coull's for a share, carried over to PPI++. Beside the ``n``
labelled items, the estimate counts two **pseudo-items** of weight ``z²/2`` each (``z`` the
normal quantile of the level, 1.96 at 95%): one whose human grade is the bottom of the scale
and one whose human grade is its top, both with the judge's mean grade over all items as
their judge grade, so that they say nothing about how the judge relates to the humans.
Everything else is PPI++ as ``ppi_py`` computes it, with the pseudo-items as rows of weight
``z²/2`` (:func:`weighted_ppi`: for whole-number weights it equals ``ppi_py`` on the rows
repeated, and with no pseudo-items it is ``ppi_py`` itself):

- the weight on the judge is tuned as ``ppi_py`` tunes it, over the labelled items and the
  pseudo-items, which pulls it towards 0 while few items are labelled;
- the interval's centre is ``λ · mean(judge on the unlabelled items)`` plus the weighted
  mean of the rectifier ``human − λ · judge``;
- its standard error adds the judge part's ``λ² · var / N`` and the rectifier's weighted
  variance over ``n + z²``; the interval is the centre ± ``z`` standard errors.

The estimate shown beside the interval is the plain one, without the pseudo-items (the
labelled items' mean; PPI++'s at the same weight): the pseudo-items widen the interval and
pull its centre towards the middle of the scale, as Agresti and Coull's do, without moving
what the labels say (on the LLMJudge files the plain estimate fell inside its interval in
every one of 21,000 draws of 2 to 20 labels).

At ``λ = 0`` this is the human-only interval, and for a share (a 0/1 column) it is exactly
Agresti and Coull's. The pseudo-items disagree with the judge, so the rectifier never has
zero variance: when no labelled item shows an error the interval is as wide as an error
rate of about ``z²/2`` in ``n + z²`` allows, which is what ``n`` items without an error can
rule out. Their weight fades as ``z² / n``: at 400 labels the intervals are ppi-python's to
within 5% of their width. The effective sample size compares the two standard errors
(:attr:`mmjudge.estimation.estimate_record.Estimate.effective_n`), both made this same way.

Hand-written rather than a library's: ``ppi_py`` takes sampling weights (each labelled row's
values multiplied by its weight), not frequency weights, and no library gives Agresti and
Coull's construction for a mean on a scale or for PPI++.

This applies where a mean is estimated over all items from a draw with equal chances; the
per-query estimate (:mod:`mmjudge.estimation.strata`, 40 labelled items a query at least) and
draws with unequal chances keep ``ppi_py``'s intervals as they are. Every interval is then
cut to the range its quantity can take (:func:`fit`), unless it lies wholly outside it, in
which case it is shown as it came and said so.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from mmjudge.metrics.labels import FloatArray

#: The columns given these intervals.
MEANS = ("mean grade", "share relevant")


@functools.cache
def critical(alpha: float) -> float:
    """The normal quantile of a two-sided interval at level ``1 − alpha``."""
    from scipy import stats

    return float(stats.norm.ppf(1 - alpha / 2))


def pseudo_weight(alpha: float) -> float:
    """The weight of each of the two pseudo-items: ``z²/2`` (Agresti and Coull's)."""
    return critical(alpha) ** 2 / 2


class Weighted(NamedTuple):
    """Per column: a PPI estimate from weighted labelled rows."""

    point: FloatArray
    """The estimate."""
    se: FloatArray
    """Its standard error (the interval is ``point ± z · se``)."""
    lam: FloatArray
    """The weight on the judge (tuned, or as given)."""


def weighted_ppi(
    y: FloatArray,
    yhat: FloatArray,
    rest: FloatArray,
    weights: FloatArray,
    lam: FloatArray | None = None,
) -> Weighted:
    """PPI's mean estimate with each labelled row counted ``weights`` times (frequency
    weights: a row of weight 2 is two equal rows), ``lam`` tuned per column as
    ``ppi_py.ppi_mean_ci`` tunes it (``lam_optim_mode="element"``, clipped to [0, 1]) when
    not given. ``y`` and ``yhat`` are rows × columns over the labelled rows, ``rest`` the
    judge's columns on the unlabelled items.

    With every weight 1 this is ``ppi_py``'s ``ppi_mean_pointestimate`` and the standard
    error behind ``ppi_mean_ci``; with whole-number weights, the same on the rows repeated.
    """
    w = np.asarray(weights, dtype=float)[:, None]
    total = float(w.sum())
    big_n = rest.shape[0]
    if lam is None:
        lam = _tuned(y, yhat, rest, w, total)
    rectifier = y - lam * yhat
    centre = (w * rectifier).sum(axis=0) / total
    spread = (w * (rectifier - centre) ** 2).sum(axis=0) / total
    imputed = (lam * rest).var(axis=0) / big_n
    point = lam * rest.mean(axis=0) + centre
    return Weighted(point, np.sqrt(imputed + spread / total), np.asarray(lam, dtype=float))


def _tuned(y: FloatArray, yhat: FloatArray, rest: FloatArray, w: Any, total: float) -> FloatArray:
    """``ppi_py``'s tuned weight with frequency weights: the covariance of ``y`` and ``yhat``
    over the labelled rows over ``(1 + n/N)`` times the variance of the judge's column over
    the labelled rows and the unlabelled items (``n − 1`` dividing), clipped to [0, 1]."""
    big_n = rest.shape[0]
    my, mh = (w * y).sum(axis=0) / total, (w * yhat).sum(axis=0) / total
    cov = (w * (y - my) * (yhat - mh)).sum(axis=0) / total
    every = total + big_n
    mean = ((w * yhat).sum(axis=0) + rest.sum(axis=0)) / every
    squares = (w * (yhat - mean) ** 2).sum(axis=0) + ((rest - mean) ** 2).sum(axis=0)
    var = squares / (every - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + total / big_n) * var)
    return np.clip(np.nan_to_num(lam, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)


class MeanIntervals(NamedTuple):
    """Per column, PPI++ and human-only with the two pseudo-items counted, and the estimates
    shown with them."""

    ppi: Weighted
    """PPI++: the weight on the judge tuned over the labelled and the pseudo-items; its
    ``point`` is the interval's centre."""
    human: Weighted
    """Human-only: the same at weight 0 (Agresti–Coull's for a 0/1 column)."""
    ppi_estimate: FloatArray
    """PPI++'s estimate from the labelled items alone at the same weight (``ppi_py``'s
    point estimate at that weight): the pseudo-items widen the interval and move its
    centre, not the estimate."""
    human_estimate: FloatArray
    """The labelled items' mean."""


def with_pseudo_items(
    y: FloatArray,
    yhat: FloatArray,
    rest: FloatArray,
    bounds: tuple[FloatArray, FloatArray],
    alpha: float,
) -> MeanIntervals:
    """The labelled rows ``y``, ``yhat`` (rows × columns) and the judge on the unlabelled
    items ``rest``, with two pseudo-items of weight ``z²/2`` per column: human values at
    the column's ``bounds`` (lowest, highest), judge value the judge's mean over all items."""
    low, high = (np.asarray(b, dtype=float) for b in bounds)
    judge_mean = (yhat.sum(axis=0) + rest.sum(axis=0)) / (yhat.shape[0] + rest.shape[0])
    rows_y = np.vstack([y, low, high])
    rows_yhat = np.vstack([yhat, judge_mean, judge_mean])
    c = pseudo_weight(alpha)
    weights = np.concatenate([np.ones(y.shape[0]), [c, c]])
    ppi = weighted_ppi(rows_y, rows_yhat, rest, weights)
    plain = weighted_ppi(y, yhat, rest, np.ones(y.shape[0]), lam=ppi.lam)
    return MeanIntervals(
        ppi,
        weighted_ppi(rows_y, rows_yhat, rest, weights, lam=np.zeros(y.shape[1])),
        plain.point,
        y.mean(axis=0),
    )


def value_range(name: str, grades: FloatArray) -> tuple[float, float]:
    """The values a column's quantity can take: the scale's (``grades``) for the mean
    grade, [0, 1] for a share, nDCG or P."""
    if name == "mean grade":
        return float(np.min(grades)), float(np.max(grades))
    return 0.0, 1.0


class Fitted(NamedTuple):
    """An interval fitted to the values its quantity can take."""

    values: tuple[float, float, float]
    """(estimate, low, high) after fitting; low and high ``nan`` where there is no interval."""
    clipped: bool
    """It reached past the range and was cut to it."""
    outside: bool
    """It lies wholly outside the range (cut, it would be a point): shown uncut."""
    no_width: bool
    """It had no width (the labelled items' values do not vary): no interval is given."""


def fit(values: tuple[float, float, float], low: float, high: float) -> Fitted:
    """``(estimate, low, high)`` cut to ``[low, high]``. An interval wholly outside that
    range is left as it is and marked (cut, it would be a point and claim a certainty no
    sample gives); an interval of no width is no interval: its bounds become ``nan`` and it
    is marked; ``nan`` stays ``nan``."""
    centre, a, b = values
    if math.isnan(a) or math.isnan(b):
        return Fitted(values, False, False, False)
    if b - a <= 0:
        return Fitted((centre, math.nan, math.nan), False, False, True)
    if b < low or a > high:
        return Fitted(values, False, True, False)
    cut = tuple(v if math.isnan(v) else min(max(v, low), high) for v in (centre, a, b))
    found = (cut[0], cut[1], cut[2])
    if found[2] - found[1] <= 0:  # it touches the range at one end only
        return Fitted(values, False, True, False)
    return Fitted(found, found != values, False, False)


def apply(
    names: list[str],
    grades: FloatArray,
    ways: Any,
    values: tuple[FloatArray, FloatArray, FloatArray],
    alpha: float,
) -> None:
    """The means' intervals with the pseudo-items, in place: ``values`` are the labelled
    items' human and judge columns and the judge's on the unlabelled items (a draw with equal
    chances); ``ways`` holds per column the PPI++ ``point``, ``low``, ``high``, ``lam`` and
    ``se`` and the human-only ``human_point``, ``human_low``, ``human_high`` and
    ``human_se`` arrays; ``grades`` is the scale."""
    picked = [k for k, name in enumerate(names) if name in MEANS]
    if not picked:
        return
    y, yhat, rest = (v[:, picked] for v in values)
    ranges = [value_range(names[k], grades) for k in picked]
    bounds = (np.array([r[0] for r in ranges]), np.array([r[1] for r in ranges]))
    found = with_pseudo_items(y, yhat, rest, bounds, alpha)
    z = critical(alpha)
    for way, estimate, point, low, high, se in (
        (found.ppi, found.ppi_estimate, ways.point, ways.low, ways.high, ways.se),
        (
            found.human,
            found.human_estimate,
            ways.human_point,
            ways.human_low,
            ways.human_high,
            ways.human_se,
        ),
    ):
        point[picked] = estimate
        low[picked], high[picked] = way.point - z * way.se, way.point + z * way.se
        se[picked] = way.se
    ways.lam[picked] = found.ppi.lam
