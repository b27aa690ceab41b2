"""Drift between two checks of one judge on the same items: how many grades changed, κ
between the checks, and whether the distribution of grades moved — pure functions of two
label arrays.

- **Change share**: the share of items (answered in both checks) whose grade differs; its
  interval resamples whole queries (it is one minus the accuracy of one check against the
  other, so the bootstrap takes its fast path). Where no item changed, or every item did,
  resampling has nothing to vary and would report a zero-width interval; the interval is then
  the exact binomial (Clopper–Pearson) one over the items (:mod:`mmjudge.metrics.exact`),
  so 0 changes in 240 items reads "0.0% [0.0%, 1.5%]" rather than "exactly 0".
- **κ between checks**: Cohen's κ, unweighted, with its interval the same way. Where no item
  changed, or every item did, the bootstrap would again give a zero-width interval (κ = 1 in
  every resample); the interval is then the change share's exact one carried through κ's
  formula (:func:`mmjudge.metrics.exact.kappa_from_share`), so 0 changes in 240 items on
  a four-grade scale used evenly read κ 1.000 [0.980, 1.000].
- **Stuart–Maxwell test** of marginal homogeneity (``statsmodels``'
  ``SquareTable.homogeneity``): whether the grade distribution of the second check differs
  from the first's, on the square table of the paired grades. Undefined (``None``) when the
  table leaves nothing to test (every item kept its grade, or one grade only).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.metrics.exact import exact_share, kappa_from_share
from mmjudge.metrics.resampling import bootstrap_ci
from mmjudge.metrics.scoring import N_BOOT, SEED, kappa_metric, none_if_nan
from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import Drift, HomogeneityTest


def marginal_homogeneity(table: np.ndarray) -> HomogeneityTest:
    """The Stuart–Maxwell test on a square table of paired grades (rows: the first check),
    each figure None where the test is undefined."""
    from statsmodels.stats.contingency_tables import SquareTable

    if table.sum() == 0 or np.count_nonzero(table - np.diag(np.diag(table))) == 0:
        return HomogeneityTest()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a singular covariance gives nan, reported as None
        result = SquareTable(table, shift_zeros=False).homogeneity()
    statistic, p = float(result.statistic), float(result.pvalue)
    if not (math.isfinite(statistic) and math.isfinite(p)):
        return HomogeneityTest()
    return HomogeneityTest(statistic, float(result.df), p)


def _interval(ci: Any, flip: bool = False) -> Bounds:
    if flip:  # a share that changed from the share that stayed: 1 − x, the ends swapped
        return Bounds(
            none_if_nan(1 - ci.estimate), none_if_nan(1 - ci.high), none_if_nan(1 - ci.low)
        )
    return Bounds(none_if_nan(ci.estimate), none_if_nan(ci.low), none_if_nan(ci.high))


def drift_summary(
    before: Any,
    after: Any,
    query_ids: Any,
    *,
    grades: Sequence[float],
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> Drift:
    """Two checks of one judge compared item by item (arrays aligned; ``nan``: no grade):
    the items graded in both, how many changed, the share changed and κ between the checks
    with 95% intervals resampling queries, the Stuart–Maxwell test, the confusion table
    (rows: the first check's grade) and each check's grade counts."""
    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    both = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[both], b[both]
    queries = np.asarray(query_ids).astype(str)[both]
    scale = [float(g) for g in grades]
    n = int(both.sum())
    change, kappa = Bounds(), Bounds()
    table = metrics.confusion_matrix(a, b, scale)
    changed = int((a != b).sum())
    if n and changed in (0, n):  # nothing for the bootstrap to vary: exact intervals
        share = exact_share(changed, n)
        change = Bounds(**share)
        kappa = Bounds(**kappa_from_share(np.asarray(table, dtype=float), share))
    elif n:
        same = bootstrap_ci(metrics.accuracy, queries, a, b, n_boot=n_boot, seed=seed)
        change = _interval(same, flip=True)
        kappa = _interval(
            bootstrap_ci(kappa_metric(scale), queries, a, b, n_boot=n_boot, seed=seed)
        )
    return Drift(
        n_paired=n,
        changed=changed,
        change_share=change,
        kappa=kappa,
        stuart_maxwell=marginal_homogeneity(np.asarray(table, dtype=float)),
        confusion=np.asarray(table).tolist(),
        before=_counts(metrics.label_distribution(a, scale)),
        after=_counts(metrics.label_distribution(b, scale)),
    )


def _counts(distribution: Mapping[Any, int]) -> dict[str, int]:
    """Items per grade, the grade written as the file keeps it."""
    return {str(grade): int(count) for grade, count in distribution.items()}
