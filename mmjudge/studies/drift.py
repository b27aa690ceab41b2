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
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.metrics.exact import exact_share, kappa_from_share
from mmjudge.metrics.resampling import bootstrap_ci
from mmjudge.metrics.scoring import N_BOOT, SEED, kappa_metric, none_if_nan


def marginal_homogeneity(table: np.ndarray) -> dict[str, float | None]:
    """The Stuart–Maxwell test on a square table of paired grades (rows: the first check):
    ``{statistic, df, p}``, each None where the test is undefined."""
    from statsmodels.stats.contingency_tables import SquareTable

    if table.sum() == 0 or np.count_nonzero(table - np.diag(np.diag(table))) == 0:
        return {"statistic": None, "df": None, "p": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a singular covariance gives nan, reported as None
        result = SquareTable(table, shift_zeros=False).homogeneity()
    statistic, p = float(result.statistic), float(result.pvalue)
    if not (math.isfinite(statistic) and math.isfinite(p)):
        return {"statistic": None, "df": None, "p": None}
    return {"statistic": statistic, "df": float(result.df), "p": p}


def _interval(ci: Any, flip: bool = False) -> dict[str, float | None]:
    if flip:  # a share that changed from the share that stayed: 1 − x, the ends swapped
        return {
            "estimate": none_if_nan(1 - ci.estimate),
            "low": none_if_nan(1 - ci.high),
            "high": none_if_nan(1 - ci.low),
        }
    return {
        "estimate": none_if_nan(ci.estimate),
        "low": none_if_nan(ci.low),
        "high": none_if_nan(ci.high),
    }


def drift_summary(
    before: Any,
    after: Any,
    query_ids: Any,
    *,
    grades: Sequence[float],
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict[str, Any]:
    """Two checks of one judge compared item by item (arrays aligned; ``nan``: no grade).

    Keys: n (items graded in both), changed (how many kept no grade), change_share and
    kappa (``{estimate, low, high}``, 95% intervals resampling queries), stuart_maxwell
    (``{statistic, df, p}``), confusion (rows: the first check's grade, columns: the
    second's) and label_distribution (``{before, after}``, counts by grade).
    """
    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    both = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[both], b[both]
    queries = np.asarray(query_ids).astype(str)[both]
    scale = [float(g) for g in grades]
    n = int(both.sum())
    empty: dict[str, float | None] = {"estimate": None, "low": None, "high": None}
    change, kappa = dict(empty), dict(empty)
    table = metrics.confusion_matrix(a, b, scale)
    changed = int((a != b).sum())
    if n and changed in (0, n):  # nothing for the bootstrap to vary: exact intervals
        change = exact_share(changed, n)
        kappa = kappa_from_share(np.asarray(table, dtype=float), change)
    elif n:
        same = bootstrap_ci(metrics.accuracy, queries, a, b, n_boot=n_boot, seed=seed)
        change = _interval(same, flip=True)
        kappa = _interval(
            bootstrap_ci(kappa_metric(scale), queries, a, b, n_boot=n_boot, seed=seed)
        )
    return {
        "n": n,
        "changed": changed,
        "change_share": change,
        "kappa": kappa,
        "stuart_maxwell": marginal_homogeneity(np.asarray(table, dtype=float)),
        "confusion": np.asarray(table).tolist(),
        "label_distribution": {
            "before": metrics.label_distribution(a, scale),
            "after": metrics.label_distribution(b, scale),
        },
    }
