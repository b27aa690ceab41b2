"""Intervals for the mean grade and the share of relevant items from few labelled items.

The normal interval that ``ppi_py`` gives is a large-sample one. With a few dozen labelled
items it is too narrow (on the LLMJudge files it held the truth in 87–94% of draws at 20–100
labels, docs/estimates.md), and when the labelled items happen to share one grade (20 items,
none relevant) it has no width at all: ``[0, 0]``. Below :data:`SMALL_BELOW` labelled items
drawn with equal chances, the means are therefore given small-sample intervals:

- **human-only**: the share relevant gets Wilson's score interval; the mean grade Student's t
  interval (the standard error with ``n − 1``, ``n − 1`` degrees of freedom), and, when the
  labelled grades do not vary, the same score interval on the scale's range (the set of means
  ``μ`` with ``(x̄ − μ)² ≤ z² (μ − a)(b − μ) / n``: a variable on ``[a, b]`` with mean ``μ``
  has at most that variance, so it holds whatever the grades' spread; on ``[0, 1]`` it is
  Wilson's).
- **PPI++**: ``ppi_py``'s interval widened to the t quantile with the standard error taken
  with ``n − 1``; when the labelled human grades do not vary there is nothing to tune the
  judge's weight on, and the human-only interval stands (weight 0).

Every interval, and the system measures', is then clipped to the range its quantity can take
(the scale's for the mean grade, ``[0, 1]`` for the rest), and the estimate says so.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mmjudge.metrics.labels import FloatArray

#: Below this many labelled items the means get the small-sample intervals and a caution:
#: from 200 the normal intervals held 94% on the LLMJudge files (docs/estimates.md).
SMALL_BELOW = 200


def score_interval(
    mean: float, n: int, low: float, high: float, critical: float
) -> tuple[float, float]:
    """The means ``μ`` in ``[low, high]`` with ``(mean − μ)² ≤ critical² (μ − low)(high − μ)
    / n``: Wilson's interval for a share when ``[low, high]`` is ``[0, 1]``."""
    span = high - low
    if n < 1 or span <= 0:
        return math.nan, math.nan
    m = min(max((mean - low) / span, 0.0), 1.0)
    k = critical**2 / n
    centre = (m + k / 2) / (1 + k)
    half = math.sqrt(k * m * (1 - m) + k * k / 4) / (1 + k)
    return low + span * max(centre - half, 0.0), low + span * min(centre + half, 1.0)


def t_factor(n: int, alpha: float) -> float:
    """How much wider a t interval (``n − 1`` degrees of freedom, standard error with
    ``n − 1``) is than the normal one with the standard error taken with ``n``."""
    from scipy import stats

    if n < 2:
        return math.nan
    normal = float(stats.norm.ppf(1 - alpha / 2))
    return float(stats.t.ppf(1 - alpha / 2, n - 1)) / normal * math.sqrt(n / (n - 1))


def widen(point: float, low: float, high: float, factor: float) -> tuple[float, float]:
    """An interval around ``point`` with each side ``factor`` times as long."""
    return point - (point - low) * factor, point + (high - point) * factor


def value_range(name: str, grades: FloatArray) -> tuple[float, float]:
    """The values a column's quantity can take: the scale's (``grades``) for the mean
    grade, [0, 1] for a share, nDCG or P."""
    if name == "mean grade":
        return float(np.min(grades)), float(np.max(grades))
    return 0.0, 1.0


def clip(values: tuple[float, float, float], low: float, high: float) -> tuple[float, float, float]:
    """Each value moved into ``[low, high]`` (``nan`` left as it is)."""
    a, b, c = (v if math.isnan(v) else min(max(v, low), high) for v in values)
    return a, b, c


def no_spread(y: FloatArray) -> Any:
    """Per column, whether the labelled values are all the same."""
    return np.ptp(y, axis=0) == 0 if y.shape[0] else np.ones(y.shape[1], dtype=bool)


#: The columns given small-sample intervals.
MEANS = ("mean grade", "share relevant")


def apply(names: list[str], grades: FloatArray, ways: Any, y: FloatArray, alpha: float) -> None:
    """The means' intervals from the ``y.shape[0]`` labelled items (fewer than
    :data:`SMALL_BELOW`, drawn with equal chances), in place: ``ways`` holds per column the
    PPI++ ``point``, ``low``, ``high``, ``lam`` and the human-only ``classical``,
    ``classical_low`` and ``classical_high`` arrays; ``grades`` is the scale."""
    from scipy import stats

    n = y.shape[0]
    factor = t_factor(n, alpha)
    critical = float(stats.norm.ppf(1 - alpha / 2))
    flat = no_spread(y)
    for k, name in enumerate(names):
        if name not in MEANS:
            continue
        mean = float(ways.classical[k])
        low, high = value_range(name, grades)
        if name == "share relevant" or flat[k]:
            human = score_interval(mean, n, low, high, critical)
        else:
            human = widen(mean, float(ways.classical_low[k]), float(ways.classical_high[k]), factor)
        ways.classical_low[k], ways.classical_high[k] = human
        if flat[k] or not math.isfinite(float(ways.point[k])):
            ways.point[k], ways.lam[k] = mean, 0.0
            ways.low[k], ways.high[k] = human
        else:
            ways.low[k], ways.high[k] = widen(
                float(ways.point[k]), float(ways.low[k]), float(ways.high[k]), factor
            )
