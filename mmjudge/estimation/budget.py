"""How to spend a budget on human labels and a judge's labels: the split that gives the
narrowest prediction-powered interval of the mean grade (``ppi_py.ppi_mean_power``), from a
pilot's paired grades."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from mmjudge.estimation import pilot
from mmjudge.metrics.labels import as_labels


class BudgetSplit(NamedTuple):
    """How to spend a budget on human and judge labels for the narrowest PPI interval of the
    mean grade (``ppi_py.ppi_mean_power``)."""

    human_labels: int
    """Items to label by people (the judge labels them too)."""
    judge_only_labels: int | None
    """Further items only the judge labels (``None``: as many as there are, for a free judge
    and no limit on items)."""
    cost: float
    effective_n: float
    """Human-only labels that would give as narrow an interval."""
    human_only_n: int
    """Human labels the whole budget buys without a judge."""
    correlation: float
    """Correlation of judge and human grades on the pilot (what the split rests on; ``nan``
    when the judge's grades do not vary)."""


def budget_split(
    human: Any,
    judge: Any,
    *,
    budget: float,
    cost_per_label: float,
    judge_cost_per_label: float,
    pool: int | None = None,
) -> BudgetSplit:
    """The split of ``budget`` between human labels (``cost_per_label`` each, plus the
    judge's price) and judge-only labels that narrows the mean grade's PPI interval most,
    from the pilot's paired grades; ``pool`` caps all items labelled. A free judge labels
    every item there is (with no cap, the effective sample size is its limit,
    ``n / (1 − ρ²)``); a judge whose grades do not vary adds nothing, and the whole budget
    goes on human labels. Fewer than :data:`pilot.MIN_LABELS` paired grades, or human
    grades that do not vary, raise :class:`pilot.PilotTooSmall` (there is no correlation to
    split by)."""
    from mmjudge.estimation.prediction import load_ppi

    x, y = as_labels(human), as_labels(judge)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    human_only = math.floor(budget / cost_per_label + 1e-9)
    if x.size < pilot.MIN_LABELS or np.unique(x).size < 2:
        problem = pilot.pilot_problem(np.arange(x.size), x)
        raise pilot.PilotTooSmall(
            f"no budget split from {x.size:,} paired grades"
            + ("" if problem is None else f": {problem}")
        )
    if np.unique(y).size < 2:
        n = human_only if pool is None else min(human_only, pool)
        return BudgetSplit(n, 0, n * cost_per_label, float(n), human_only, math.nan)
    if judge_cost_per_label > 0:
        found = load_ppi().ppi_mean_power(
            x, y, cost_Y=cost_per_label, cost_Yhat=judge_cost_per_label, budget=budget, n_max=pool
        )
        return BudgetSplit(
            int(found["n"]),
            int(found["N"]),
            float(found["cost"]),
            float(found["effective_n"]),
            human_only,
            float(found["ppi_corr"]),
        )
    # A free judge: every label bought is a human one, and the judge labels every item
    # (ppi_mean_power's optimum is then unbounded); the effective sample size follows the
    # same formula, at its limit when the items are unlimited.
    rho = min(float(np.corrcoef(x, y)[0, 1]), 1 - 1 / x.size)
    shrink = 1 - rho**2
    n = human_only if pool is None else min(human_only, pool)
    if pool is None:
        return BudgetSplit(n, None, n * cost_per_label, n / shrink, human_only, rho)
    rest = pool - n
    effective = n * (n + rest) / (n + shrink * rest) if n else 0.0
    return BudgetSplit(n, rest, n * cost_per_label, effective, human_only, rho)
