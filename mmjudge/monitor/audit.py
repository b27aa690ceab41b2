"""Audits of production labels: a period's judge labels sampled by query and grade for people
to grade again, and the people's grades scored against the judge's, period after period.

- **Sampling** (:func:`stratified_sample`): the labels fall into strata, one per (query,
  grade); up to ``per_stratum`` items are drawn from each, with a seed, so every query and
  every grade the judge gave is looked at, rare grades included. Each sampled item carries
  its weight, the number of labels its stratum holds over the number drawn from it.
- **Scoring** (:func:`score_period`): the disagreement rate is the weighted share of sampled
  items whose person's grade differs from the judge's, which estimates the share over all
  the period's labels; its 95% interval resamples whole queries. The confusion table (rows:
  the judge's grade, columns: the person's) is of the sampled items, unweighted.
- **Change** (:func:`change_test`): this period's rate against the earlier periods' (pooled
  by their weights), a two-sided normal test on the difference, each standard error read off
  its bootstrap interval; and a χ² test (``statsmodels``' ``Table.test_nominal_association``)
  of whether the disagreements fall in the same cells
  of the confusion table as before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.data.qrels import Qrels
from mmjudge.metrics.resampling import bootstrap_ci
from mmjudge.metrics.scoring import N_BOOT, SEED, none_if_nan
from mmjudge.store.audit_files import SampledLabel
from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import PeriodChange, PeriodFigures
from mmjudge.store.review_file import ReviewRow, ShownItem

#: A z value of a two-sided 95% interval (to read a standard error off an interval).
Z95 = 1.959963984540054


def stratified_sample(labels: Qrels, per_stratum: int, seed: int) -> list[SampledLabel]:
    """Up to ``per_stratum`` items from each (query, grade) stratum, drawn with ``seed``,
    each with its weight, in query and grade order."""
    rng = np.random.default_rng(seed)
    sample = []
    for query in sorted(labels):
        strata: dict[int, list[str]] = {}
        for result, grade in labels[query].items():
            strata.setdefault(int(grade), []).append(result)
        for grade in sorted(strata):
            results = sorted(strata[grade])
            drawn = rng.choice(len(results), size=min(per_stratum, len(results)), replace=False)
            weight = len(results) / len(drawn)
            for index in sorted(drawn.tolist()):
                sample.append(SampledLabel(query, results[index], grade, weight))
    return sample


def _weighted_share(disagree: Any, weight: Any) -> float:
    total = float(np.sum(weight))
    return float(np.sum(disagree * weight) / total) if total else math.nan


def score_period(
    sample: Sequence[SampledLabel],
    assessed: Qrels,
    grades: Sequence[int],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> PeriodFigures:
    """A period's sampled judge labels against the people's grades (``assessed``): the
    weighted disagreement rate with its 95% interval resampling queries, its standard error
    read off the interval, and the confusion table on ``grades`` (see
    :class:`~mmjudge.store.monitor_history.PeriodFigures`)."""
    graded = [s for s in sample if s.result_id in assessed.get(s.query_id, {})]
    judge = np.array([float(s.label) for s in graded])
    person = np.array([float(assessed[s.query_id][s.result_id]) for s in graded])
    weight = np.array([s.weight for s in graded])
    queries = np.array([s.query_id for s in graded])
    disagree = (judge != person).astype(float)
    rate, se = Bounds(), None
    if graded:
        ci = bootstrap_ci(_weighted_share, queries, disagree, weight, n_boot=n_boot, seed=seed)
        rate = Bounds(none_if_nan(ci.estimate), none_if_nan(ci.low), none_if_nan(ci.high))
        if math.isfinite(ci.low) and math.isfinite(ci.high):
            se = (ci.high - ci.low) / (2 * Z95)
    scale = [float(g) for g in grades]
    return PeriodFigures(
        n_graded=len(graded),
        n_sampled=len(sample),
        n_disagree=int(disagree.sum()),
        disagreement=rate,
        disagreement_se=se,
        confusion=np.asarray(metrics.confusion_matrix(judge, person, scale)).tolist(),
        grades=tuple(grades),
    )


def change_test(now: PeriodFigures, earlier: Sequence[PeriodFigures]) -> PeriodChange | None:
    """This period's figures (:func:`score_period`) against the earlier periods': the
    difference in disagreement rate with a two-sided p-value, and the χ² test of the
    confusion pattern (where the disagreements fall). None without an earlier period."""
    before = [e for e in earlier if e.disagreement.estimate is not None]
    if not before or now.disagreement.estimate is None:
        return None
    weights = np.array([float(e.n_graded) for e in before])
    rates = np.array([float(e.disagreement.estimate or 0.0) for e in before])
    ses = np.array([float(e.disagreement_se or 0.0) for e in before])
    pooled = float(np.sum(weights * rates) / np.sum(weights))
    pooled_se = float(math.sqrt(np.sum((weights * ses) ** 2)) / np.sum(weights))
    difference = now.disagreement.estimate - pooled
    spread = math.sqrt(float(now.disagreement_se or 0.0) ** 2 + pooled_se**2)
    p_rate = math.erfc(abs(difference) / spread / math.sqrt(2)) if spread > 0 else None
    return PeriodChange(
        earlier_periods=len(before),
        earlier_disagreement=pooled,
        difference=difference,
        p=p_rate if p_rate is None or math.isfinite(p_rate) else None,
        pattern_p=_pattern_p(now, before),
    )


def _off_diagonal(confusion: Any) -> np.ndarray:
    table = np.asarray(confusion, dtype=float)
    return table[~np.eye(len(table), dtype=bool)]


def _pattern_p(now: PeriodFigures, before: Sequence[PeriodFigures]) -> float | None:
    """χ² test of homogeneity of the disagreement cells, this period against the earlier
    ones pooled (None where too few disagreements leave nothing to test)."""
    from statsmodels.stats.contingency_tables import Table

    current = _off_diagonal(now.confusion)
    if any(len(e.confusion) != len(now.confusion) for e in before):
        return None
    pooled = sum((_off_diagonal(e.confusion) for e in before), np.zeros_like(current))
    table = np.vstack([current, pooled])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2 or (table.sum(axis=1) == 0).any():
        return None
    p = float(Table(table, shift_zeros=False).test_nominal_association().pvalue)
    return p if math.isfinite(p) else None


def audit_rows(
    sample: Sequence[SampledLabel],
    texts: Mapping[tuple[str, str], ShownItem],
    dataset: str,
    grades: Sequence[int],
    period: str,
) -> list[ReviewRow]:
    """The sample as rows of the review file (:mod:`mmjudge.store.review_file`): the
    judge's label under ``judges`` as ``production``, the grade to give in
    ``corrected_grade``; ``texts`` holds what the dataset says of each item."""
    return [
        ReviewRow(
            dataset=dataset,
            query_id=item.query_id,
            result_id=item.result_id,
            grades=tuple(grades),
            shown=dataclasses.replace(
                texts.get((item.query_id, item.result_id)) or ShownItem(),
                judges={"production": item.label},
                reasons=(f"audit {period}: stratum of query {item.query_id}, grade {item.label}",),
            ),
        )
        for item in sample
    ]
