"""κ's interval from leaving out one query at a time: an interval that knows how few queries
there are.

A bootstrap over a handful of queries cannot show how much queries differ: with four queries
most resamples repeat one or two of them, and its spread divides by ``q`` where ``q − 1``
belongs. The jackknife over queries takes κ on the data with each query left out in turn;
the spread of those values gives the standard error (``(q − 1)/q · Σ (κ₍g₎ − κ̄)²``, after
Quenouille and Tukey), and the interval uses Student's t on the queries' effective degrees
of freedom (:func:`cluster_degrees_of_freedom`), so it widens as the queries get fewer (t on
3 degrees of freedom is 3.18 where the normal quantile is 1.96). Nothing is drawn: the same
labels always give the same interval. With many queries it agrees with the query bootstrap
(:mod:`mmjudge.metrics.resampling`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from mmjudge.metrics.kappa import kappa_from_tables
from mmjudge.metrics.labels import FloatArray, as_labels, confusion_tables, query_codes


class JackknifeResult(NamedTuple):
    """An estimate with a t interval from leaving out one query at a time."""

    estimate: float
    """The value on all the items."""
    low: float
    """The estimate less the t quantile times the standard error (``nan`` when undefined)."""
    high: float
    """The estimate plus the t quantile times the standard error (``nan`` when undefined)."""
    level: float
    """Coverage of the interval, e.g. 0.95."""
    standard_error: float
    """The jackknife standard error over queries (``nan`` with fewer than two queries or
    when leaving out some query leaves the value undefined)."""
    degrees_of_freedom: float
    """Of the t quantile (:func:`cluster_degrees_of_freedom` of the queries' sizes)."""
    n_items: int
    """Items the value is on."""
    n_queries: int
    """Queries among them (each left out in turn)."""
    n_undefined: int
    """Queries whose leaving out leaves the value undefined."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (``nan`` when it is undefined)."""
        return (self.high - self.low) / 2.0

    @property
    def quantile(self) -> float:
        """The t quantile the interval uses (half-width over standard error)."""
        return t_quantile(self.level, self.degrees_of_freedom)


def t_quantile(level: float, degrees_of_freedom: float) -> float:
    """Student's t quantile of a two-sided ``level`` interval (``nan`` without degrees of
    freedom)."""
    if not (math.isfinite(degrees_of_freedom) and degrees_of_freedom > 0):
        return math.nan
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2.0, degrees_of_freedom))


def cluster_degrees_of_freedom(sizes: Any) -> float:
    """The degrees of freedom of a variance estimated from queries of these ``sizes`` (items
    each): ``q − 1`` for ``q`` queries of one size, fewer when a few large queries carry most
    of the items.

    When queries differ among themselves (items of one query share its difficulty), each
    query's share of the jackknife variance grows with the square of its items, so the
    variance is a sum of ``q`` terms weighted by ``n_g²``. Satterthwaite's approximation
    gives such a sum ``(Σ n_g²)² / Σ n_g⁴`` degrees of freedom, taken here times
    ``(q − 1) / q`` for the mean the jackknife takes out: the effective number of clusters
    (Carter, Schnepel and Steigerwald, 2017) less one. ``nan`` with fewer than two
    queries."""
    n = np.asarray(sizes, dtype=float)
    n = n[n > 0]
    q = n.size
    if q < 2:
        return math.nan
    squares = n**2
    return float((q - 1) / q * squares.sum() ** 2 / (squares**2).sum())


def from_left_out(
    estimate: float, left_out: Any, sizes: Any, level: float = 0.95
) -> JackknifeResult:
    """The jackknife interval of a value from its ``estimate`` on all queries, its values
    with each query left out (``left_out``, one per query) and the queries' ``sizes``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie between 0 and 1, got {level}")
    values = np.asarray(left_out, dtype=float)
    counts = np.asarray(sizes, dtype=float)
    q = int(values.size)
    undefined = int(np.sum(~np.isfinite(values)))
    df = cluster_degrees_of_freedom(counts)
    n_items = int(counts.sum())
    if q < 2 or undefined or not math.isfinite(estimate):
        nan = math.nan
        return JackknifeResult(estimate, nan, nan, level, nan, df, n_items, q, undefined)
    se = math.sqrt((q - 1) / q * float(np.sum((values - values.mean()) ** 2)))
    half = t_quantile(level, df) * se
    return JackknifeResult(estimate, estimate - half, estimate + half, level, se, df, n_items, q, 0)


def _query_tables(
    query_ids: Any, arrays: Sequence[FloatArray], grades: Sequence[float]
) -> tuple[list[FloatArray], FloatArray]:
    """Each rater's κ tables against the first array, one per query that has an item every
    array graded on the scale, and those queries' sizes."""
    reference = arrays[0]
    present = np.ones(reference.shape, dtype=bool)
    scale = np.asarray(sorted(float(g) for g in grades))
    for a in arrays:
        present &= np.isin(a, scale)
    groups, n_groups = query_codes(query_ids, reference.size)
    masked = [np.where(present, a, np.nan) for a in arrays]
    tables = [confusion_tables(masked[0], b, scale, groups, n_groups) for b in masked[1:]]
    sizes = tables[0].sum(axis=(1, 2))
    used = sizes > 0
    return [t[used] for t in tables], sizes[used]


def _left_out_kappa(tables: FloatArray) -> tuple[float, FloatArray]:
    total = tables.sum(axis=0)
    estimate = float(kappa_from_tables(total[None], None, math.nan)[0])
    return estimate, kappa_from_tables(total[None] - tables, None, math.nan)


def kappa_jackknife(
    query_ids: Any, reference: Any, judge: Any, grades: Sequence[float], *, level: float = 0.95
) -> JackknifeResult:
    """Unweighted Cohen's κ of ``judge`` against ``reference`` (aligned arrays, ``nan`` = no
    grade) on the items both graded on the scale ``grades``, with the jackknife interval
    over queries."""
    ref, lab = as_labels(reference), as_labels(judge)
    if ref.size != lab.size:
        raise ValueError("reference and judge labels differ in length")
    (tables,), sizes = _query_tables(query_ids, (ref, lab), grades)
    estimate, left_out = _left_out_kappa(tables)
    return from_left_out(estimate, left_out, sizes, level)


def paired_kappa_jackknife(
    query_ids: Any,
    reference: Any,
    judge_a: Any,
    judge_b: Any,
    grades: Sequence[float],
    *,
    level: float = 0.95,
) -> JackknifeResult:
    """κ(a) − κ(b) against ``reference`` on the items all three graded on the scale, with
    the jackknife interval over queries (both judges lose the same query each time)."""
    ref, a, b = as_labels(reference), as_labels(judge_a), as_labels(judge_b)
    if not ref.size == a.size == b.size:
        raise ValueError("label arrays differ in length")
    (table_a, table_b), sizes = _query_tables(query_ids, (ref, a, b), grades)
    est_a, out_a = _left_out_kappa(table_a)
    est_b, out_b = _left_out_kappa(table_b)
    return from_left_out(est_a - est_b, out_a - out_b, sizes, level)
