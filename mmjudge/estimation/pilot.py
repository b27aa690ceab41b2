"""What a pilot of human labels can say about the labels a plan needs, and when it is too
small to say anything.

A plan scales what the pilot shows: the spread of κ (or of Δκ between two judges) from one
query to the next. A pilot measures that spread from its own few queries, so it is itself
uncertain, and more so the fewer (and the more unequal) the queries are:

- **The pilot's interval** is the jackknife over queries with Student's t on the queries'
  effective degrees of freedom ν (:mod:`mmjudge.metrics.jackknife`).
- **The spread planned with** is the upper ``confidence`` bound of the per-query standard
  deviation, ``σ̂ · √(ν / χ²_ν(1 − confidence))`` (the jackknife variance taken as a
  variance on ν degrees of freedom): :func:`pilot_widening`.
- **Queries for a half-width** ``H``: the fewest queries ``q`` like the pilot's whose t
  interval is no wider, ``t(ν_q) · σ / √q ≤ H``, where ``ν_q = (q − 1) · ν / (q₀ − 1)`` keeps
  the pilot's mix of query sizes (:func:`queries_for_half_width`).
- **Too small to plan from**: fewer than :data:`MIN_QUERIES` queries or :data:`MIN_LABELS`
  labels, human grades that do not vary, a query without which κ is undefined, or a spread
  of exactly zero (:func:`pilot_problem`, :func:`spread_of`). The plan is refused in one
  line that says what pilot would do, rather than scaled from nothing.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from mmjudge.errors import MMJudgeError
from mmjudge.metrics.jackknife import JackknifeResult, t_quantile
from mmjudge.metrics.labels import as_labels

#: Fewest queries a plan is made from: the spread between queries needs a few of them to be
#: seen at all (with 4, the plan's bound is about three times the pilot's own spread).
MIN_QUERIES = 4
#: Fewest labelled items (human and judge both graded) a plan is made from.
MIN_LABELS = 20
#: The one-sided confidence with which the spread planned with bounds the true one.
PLAN_CONFIDENCE = 0.95
#: Coverage of every interval the plan shows and plans for.
LEVEL = 0.95


class PilotTooSmall(MMJudgeError):
    """A pilot too small to plan from; the message says why and what pilot would do."""


#: What every refusal ends with: the pilot that would do.
WOULD_DO = (
    f"a pilot of at least {MIN_LABELS} human labels in {MIN_QUERIES} or more queries (8 or "
    "more plan far tighter), with grades that vary, would do"
)


def _counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1 (``query``: ``queries``)."""
    plural = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{n:,} {word if n == 1 else plural}"


def pilot_problem(query_ids: Any, reference: Any, judge: Any = None) -> str | None:
    """Why the pilot (the items with a human grade in ``reference``, and one in ``judge``
    when given) is too small to plan from, in one line ending with what pilot would do;
    ``None`` when it is not."""
    ref = as_labels(reference)
    keep = ~np.isnan(ref)
    if judge is not None:
        keep &= ~np.isnan(as_labels(judge))
    graded = ref[keep]
    queries = {str(q) for q in np.asarray(query_ids, dtype=object)[keep]}
    labels = _counted(int(graded.size), "human label")
    if graded.size < MIN_LABELS or len(queries) < MIN_QUERIES:
        return f"the pilot has {labels} in {_counted(len(queries), 'query')}: {WOULD_DO}"
    if np.unique(graded).size < 2:
        return f"every one of the pilot's {labels} is {graded[0]:g}: {WOULD_DO}"
    return None


class PilotSpread(NamedTuple):
    """What the pilot says about one quantity (κ, or Δκ of two judges) and its spread."""

    estimate: float
    """The value on the pilot."""
    standard_error: float
    """Its jackknife standard error over the pilot's queries (above 0)."""
    degrees_of_freedom: float
    """Of that standard error: the queries' effective number less one."""
    n_items: int
    """Pilot items the value is on."""
    n_queries: int
    """Queries among them."""

    @property
    def items_per_query(self) -> float:
        """The pilot's items per query: new labels are counted as queries like these."""
        return self.n_items / self.n_queries

    @property
    def half_width(self) -> float:
        """Half the pilot's 95% interval (t on its degrees of freedom)."""
        return t_quantile(LEVEL, self.degrees_of_freedom) * self.standard_error

    @property
    def per_query(self) -> float:
        """The standard deviation one query adds: the standard error times √queries."""
        return self.standard_error * math.sqrt(self.n_queries)


def spread_of(found: JackknifeResult, what: str) -> PilotSpread:
    """The :class:`PilotSpread` of a jackknife interval, or :class:`PilotTooSmall` when it
    shows no spread to plan from (``what`` names the value in the message)."""
    if found.n_queries < MIN_QUERIES or found.n_items < MIN_LABELS:
        raise PilotTooSmall(
            f"{what} is on {_counted(found.n_items, 'item')} in "
            f"{_counted(found.n_queries, 'query')}: {WOULD_DO}"
        )
    if found.n_undefined:
        raise PilotTooSmall(
            f"{what} is undefined without {_counted(found.n_undefined, 'query')} of the "
            f"pilot's {found.n_queries:,} (the grades vary in too few of them): {WOULD_DO}"
        )
    if not (math.isfinite(found.standard_error) and found.standard_error > 0):
        raise PilotTooSmall(
            f"{what} is {found.estimate:.3f} whichever of the pilot's {found.n_queries:,} "
            f"queries is left out, so the pilot shows no spread to plan from: {WOULD_DO}"
        )
    return PilotSpread(
        found.estimate,
        found.standard_error,
        found.degrees_of_freedom,
        found.n_items,
        found.n_queries,
    )


def pilot_widening(degrees_of_freedom: float, confidence: float = PLAN_CONFIDENCE) -> float:
    """How much wider than the pilot's own spread to plan with: the upper ``confidence``
    bound of a standard deviation estimated on ``degrees_of_freedom``,
    ``√(ν / χ²_ν(1 − confidence))``. About 2.9 for 3 degrees of freedom, 1.8 for 7, 1.2 for
    50 (``nan`` without degrees of freedom)."""
    if not (math.isfinite(degrees_of_freedom) and degrees_of_freedom > 0):
        return math.nan
    from scipy import stats

    low = float(stats.chi2.ppf(1.0 - confidence, degrees_of_freedom))
    return math.sqrt(degrees_of_freedom / low) if low > 0 else math.inf


def half_width_at(spread: PilotSpread, queries: float, widening: float = 1.0) -> float:
    """The half-width ``queries`` queries like the pilot's give, its per-query spread
    widened by ``widening``."""
    scale = (queries - 1.0) / max(spread.n_queries - 1, 1)
    df = spread.degrees_of_freedom * scale
    return t_quantile(LEVEL, df) * spread.per_query * widening / math.sqrt(queries)


def queries_for_half_width(spread: PilotSpread, target: float, widening: float = 1.0) -> float:
    """The fewest queries like the pilot's (a real number, at least 2) whose interval has
    half-width ``target`` or less (:func:`half_width_at`); ``nan`` for no target or an
    unbounded widening."""
    if not (target > 0 and math.isfinite(widening) and math.isfinite(spread.per_query)):
        return math.nan
    low, high = 2.0, 2.0
    if half_width_at(spread, low, widening) <= target:
        return low
    while half_width_at(spread, high, widening) > target:
        low, high = high, high * 2.0
        if high > 1e15:
            return math.nan
    for _ in range(80):
        middle = math.sqrt(low * high)
        if half_width_at(spread, middle, widening) > target:
            low = middle
        else:
            high = middle
    return high


def reachable(spread: PilotSpread, analytic_error: float, items_there: int) -> float:
    """About the half-width with every one of ``items_there`` items of the pilot's queries
    labelled, from the pilot's central spread: the part of its variance the analytic
    (items-independent) standard error explains shrinks with the items, the rest (the
    queries' own) does not; the quantile stays the pilot's."""
    if not (math.isfinite(analytic_error) and items_there > 0):
        return math.nan
    se = spread.standard_error
    between = max(se**2 - analytic_error**2, 0.0)
    within = min(analytic_error, se) ** 2 * spread.n_items / max(items_there, spread.n_items)
    return t_quantile(LEVEL, spread.degrees_of_freedom) * math.sqrt(between + within)
