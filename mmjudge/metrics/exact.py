"""Exact intervals for the cases resampling cannot vary: a share of items that is 0 or all of
them, and Cohen's κ between two labellings of the same items that agree on every item.

Resampling queries from labels that never differ gives the same figure in every resample, so
its interval is zero-width ("κ 1.000 [1.000, 1.000]"), which claims a certainty the items do
not carry. Both figures here are exact instead:

- **A share**: ``count`` of ``n`` items with its Clopper–Pearson (exact binomial) 95%
  interval, so 0 of 240 reads 0.0% [0.0%, 1.5%].
- **κ from a share of disagreements**: unweighted κ is ``(p_o − p_e) / (1 − p_e)`` with the
  observed agreement ``p_o = 1 − disagreement share``, and it rises with ``p_o``. Holding the
  chance agreement ``p_e`` at the value the paired table's margins give, each end of the
  disagreement share's exact interval maps to one end of κ's: the most disagreement the items
  allow gives κ's lower end. So 0 disagreements in 240 items on four grades used evenly read
  κ 1.000 [0.980, 1.000], and the fewer the items, the lower that end. The chance agreement's
  own sampling error is left out: with nothing changed, the bound on the disagreement share
  is what limits κ.

Used by the canary check's κ between two checks (:mod:`mmjudge.studies.drift`) and the
judge's κ between its own samples (:mod:`mmjudge.studies.stability`), so both read alike.
"""

from __future__ import annotations

import numpy as np


def exact_share(count: int, n: int) -> dict[str, float | None]:
    """``count`` of ``n`` as a share with its exact binomial (Clopper–Pearson) 95% interval."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(count, n, alpha=0.05, method="beta")
    return {"estimate": count / n, "low": float(low), "high": float(high)}


def kappa_from_share(table: np.ndarray, change: dict[str, float | None]) -> dict[str, float | None]:
    """Unweighted κ at each end of the disagreement share ``change`` (``{estimate, low,
    high}``), chance agreement held at the square table ``table``'s (rows: one labelling's
    grade, columns: the other's; see the module notes); all ``None`` where κ is undefined
    (one grade only, or no items)."""
    n = float(table.sum())
    chance = float((table.sum(axis=1) / n) @ (table.sum(axis=0) / n)) if n else 1.0
    if chance >= 1.0 or None in change.values():
        return {"estimate": None, "low": None, "high": None}

    def kappa_at(share: float | None) -> float:
        return (1.0 - float(share or 0.0) - chance) / (1.0 - chance)

    return {
        "estimate": kappa_at(change["estimate"]),
        "low": kappa_at(change["high"]),
        "high": kappa_at(change["low"]),
    }
