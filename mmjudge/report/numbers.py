"""Pure helpers behind the report's numbers: the Pareto frontier, the mean of independent
κ estimates, the assessors scored against each other, and a cell's score read back from its
``summary.json``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from mmjudge import metrics
from mmjudge.metrics import catalogue, scoring
from mmjudge.metrics.catalogue import Comparison
from mmjudge.metrics.scoring import Interval, JudgeScore
from mmjudge.report.load import CellLabels, DatasetItems
from mmjudge.store import RunSummary


def pareto_frontier(costs: Sequence[float], kappas: Sequence[float]) -> list[bool]:
    """Which points are not dominated: no other point costs the same or less with a κ at
    least as high, and is strictly better on one of the two. Points without a κ are never
    on the frontier; exact duplicates are both kept."""
    out = []
    for i, (cost, kappa) in enumerate(zip(costs, kappas, strict=True)):
        if not math.isfinite(kappa):
            out.append(False)
            continue
        dominated = any(
            j != i
            and math.isfinite(other_kappa)
            and other_cost <= cost
            and other_kappa >= kappa
            and (other_cost < cost or other_kappa > kappa)
            for j, (other_cost, other_kappa) in enumerate(zip(costs, kappas, strict=True))
        )
        out.append(not dominated)
    return out


def mean_interval(intervals: list[Interval]) -> Interval:
    """Mean of independent estimates; its interval from the per-estimate intervals read as
    normal (half-width / 1.96 as the standard error). The mean of one estimate is that
    estimate, shown with its own bootstrap interval: a κ has one interval on a page."""
    if len(intervals) == 1:
        return intervals[0]
    estimate = float(np.mean([i.estimate for i in intervals]))
    if not all(math.isfinite(i.low) and math.isfinite(i.high) for i in intervals):
        return Interval(estimate, math.nan, math.nan)
    z = 1.959963984540054
    se = math.sqrt(sum(((i.high - i.low) / (2 * z)) ** 2 for i in intervals)) / len(intervals)
    return Interval(estimate, estimate - z * se, estimate + z * se)


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def saved_score(summary: RunSummary, n_boot: int) -> JudgeScore | None:
    """The cell's score as its run computed it with :func:`mmjudge.metrics.scoring.score_judge`
    (``summary.json``'s metrics), when it was computed with the bootstrap asked for here;
    None when the summary lacks a measure of the catalogue (it was written before the measure
    existed) or used other resamples."""
    m = summary.metrics
    boot = m.bootstrap or {}
    if (boot.get("n_boot"), boot.get("seed"), boot.get("resampled")) != (
        n_boot,
        scoring.SEED,
        "queries",
    ) or boot.get("level", scoring.LEVEL) != scoring.LEVEL:
        return None
    if m.intervals is None or m.n_scored is None or m.n_queries is None:
        return None
    values = {}
    try:
        for measure in catalogue.measures(Comparison.CONSENSUS):
            if measure.interval:
                bounds = m.intervals[measure.name]
                values[measure.name] = Interval(
                    *(_number(bounds[part]) for part in ("estimate", "low", "high"))
                )
            else:
                values[measure.name] = Interval(_number(m.values[measure.name]), math.nan, math.nan)
    except (KeyError, TypeError, ValueError):
        return None
    return JudgeScore(
        n_items=int(m.n_scored),
        n_queries=int(m.n_queries),
        n_off_scale=int(m.n_off_scale or 0),
        values=values,
    )


class HumanPair(NamedTuple):
    """Agreement between two annotators on the items both graded (scored like a judge,
    annotator ``b`` against annotator ``a``)."""

    a: str
    b: str
    score: JudgeScore
    distribution_a: dict[float, int]
    distribution_b: dict[float, int]

    @property
    def kappa(self) -> Interval:
        return self.score.kappa


def human_pairs(
    items: DatasetItems, grades: Sequence[float], relevant_from: float | None, n_boot: int
) -> list[HumanPair]:
    humans = items.humans
    names = sorted(humans)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = humans[a], humans[b]
            score = scoring.score_judge(
                items.query_rank, x, y, grades, relevant_from=relevant_from, n_boot=n_boot
            )
            if score.n_items == 0:
                continue
            both = ~(np.isnan(x) | np.isnan(y))
            out.append(
                HumanPair(
                    a=a,
                    b=b,
                    score=score,
                    distribution_a=metrics.label_distribution(x[both], grades),
                    distribution_b=metrics.label_distribution(y[both], grades),
                )
            )
    return out


def n_scored(items: DatasetItems, labels: CellLabels, grades: Sequence[float]) -> int:
    """How many of the cell's items it and the consensus both graded on the scale."""
    scale = np.asarray(grades, dtype=float)
    mask, _ = scoring.scored_items(scale, items.consensus[labels.items], labels.label)
    return int(mask.sum())
