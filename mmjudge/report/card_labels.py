"""The card's lines about human labels: how many more would tell the best judge from the
runner-up (and, with ``report.human_cost_per_label``, what they cost and how that money, or
the budget ``report.label_budget_usd`` gives, is best split between human and judge labels),
and the mean grade estimated with the best
judge's labels on the items people have not graded (prediction-powered) beside the human
labels alone.

Every number comes from :mod:`mmjudge.agreement` (``planning`` for the labels and the split,
``estimates`` for the mean grade), computed as ``mmjudge plan`` and ``mmjudge estimate``
compute them. The prediction-powered lines need the ``estimate`` extra; without it they are
left out, and nothing here stops a report.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from markupsafe import Markup

from mmjudge.agreement import scoring
from mmjudge.agreement.estimates import estimates_for
from mmjudge.agreement.planning import budget_split, extra_labels, plan_separation
from mmjudge.agreement.prediction import ItemLabels
from mmjudge.errors import MMJudgeError
from mmjudge.report.analysis import Analysis, Cell, DatasetStats
from mmjudge.report.findings.prose import join, num


class LabelLines(NamedTuple):
    """The card's label lines (``None``: not shown)."""

    more: Markup | None
    """How many more labelled items (and dollars) would separate the best two judges."""
    split: Markup | None
    """The split of those dollars between human and judge labels."""
    mean_grade: Markup | None
    """The mean grade, human-only beside prediction-powered."""


def dollars(value: float) -> str:
    """A sum of money in words: ``$1,234`` or ``$12.50``."""
    return f"${value:,.0f}" if value >= 100 else f"${value:,.2f}"


def label_lines(
    analysis: Analysis,
    stats: DatasetStats,
    human_cost_per_label: float | None,
    label_budget_usd: float | None = None,
) -> LabelLines:
    """The label lines of one dataset's card. The label budget split spends
    ``label_budget_usd`` (``report.label_budget_usd``) when given, else what the labels that
    would separate the best two judges cost; it needs ``human_cost_per_label``."""
    more, spend = _more_labels(analysis, stats, human_cost_per_label)
    if label_budget_usd is not None:
        spend = label_budget_usd
    split = None
    if spend is not None and human_cost_per_label is not None:
        split = _split(stats, stats.ranked[0], spend, human_cost_per_label)
    return LabelLines(more, split, _mean_grade(analysis, stats))


def _more_labels(
    analysis: Analysis, stats: DatasetStats, price: float | None
) -> tuple[Markup | None, float | None]:
    """The labels that would tell the best judge from the runner-up
    (:func:`mmjudge.agreement.planning.plan_separation` on the paired comparison the
    tables show), and what they cost (``None`` without a price or when none are needed)."""
    if not stats.best_vs_others:
        return None, None
    comparison = stats.best_vs_others[0]
    best, runner = (analysis.judge_name(c.judge) for c in (comparison.a, comparison.b))
    found = plan_separation(best, runner, comparison.paired)
    if found is None or not math.isfinite(found.half_width):
        return None, None
    shared = f"{found.n_items:,} items both graded"
    if found.separated:
        return join(f"The labels there are already tell {best} from {runner} ({shared})."), None
    if not math.isfinite(found.needed):
        text = f"No number of labels tells {best} from {runner}: equal κ on the {shared}."
        return join(text), None
    more = extra_labels(found.needed, found.n_items)
    spend = None if price is None else more * price
    priced = "" if spend is None else f", about {dollars(spend)}"
    line = join(
        f"To separate {best} from {runner} you need about {more:,.0f} more labelled items"
        f"{priced} (≈{math.ceil(found.needed):,} in all; now {shared}, Δκ "
        f"{num(found.difference, sign=True)} ± {num(found.half_width)})"
        + ("." if spend is not None else "; report.human_cost_per_label prices them.")
    )
    return line, spend


def _paired(stats: DatasetStats, cell: Cell) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The consensus, the judge's grade and the query number of each item the judge graded
    (``nan`` consensus where no person graded it; unparseable answers left out)."""
    if cell.labels is None:
        return np.empty(0), np.empty(0), np.empty(0, dtype=np.intp)
    judge = np.asarray(cell.labels.label, dtype=float)
    human = np.asarray(stats.items.consensus, dtype=float)[cell.labels.items]
    queries = np.asarray(stats.items.item_query)[cell.labels.items]
    keep = ~np.isnan(judge)
    return human[keep], judge[keep], queries[keep]


def _split(stats: DatasetStats, best: Cell, spend: float, price: float) -> Markup | None:
    """How ``spend`` dollars narrow the mean grade's interval most, split between human
    labels and judge-only labels (:func:`mmjudge.agreement.planning.budget_split`)."""
    if spend <= 0:
        return None
    human, judge, _ = _paired(stats, best)
    both = ~np.isnan(human)
    if both.sum() < 3:
        return None
    try:
        found = budget_split(
            human[both],
            judge[both],
            budget=spend,
            cost_per_label=price,
            judge_cost_per_label=best.usd_per_million / 1e6,
        )
    except (MMJudgeError, ValueError):  # no estimate extra, or no split: say nothing
        return None
    extra = found.judge_only_labels
    rest = "every further item" if extra is None else f"{extra:,} more items"
    return join(
        f"For the mean grade, {dollars(spend)} goes furthest as {found.human_labels:,} human "
        f"labels with the best judge on {rest}: as narrow an interval as {found.effective_n:,.0f} "
        f"human labels alone, against {found.human_only_n:,} bought without the judge "
        f"(judge–human correlation {num(found.correlation)})."
    )


def _mean_grade(analysis: Analysis, stats: DatasetStats) -> Markup | None:
    """The mean grade from the human labels alone and prediction-powered with the best
    judge's labels on the items no person graded (only when there are such items)."""
    best = stats.ranked[0]
    human, judge, queries = _paired(stats, best)
    grades = sorted(stats.grades)
    on_scale = np.isin(judge, grades)
    human, judge, queries = human[on_scale], judge[on_scale], queries[on_scale]
    labelled = ~np.isnan(human)
    if labelled.sum() < 2 or (~labelled).sum() < 2:
        return None
    n = judge.size
    items = ItemLabels([str(q) for q in queries], [str(i) for i in range(n)], human, judge)
    threshold = scoring.relevance_threshold(np.asarray(grades, dtype=float), stats.relevant_from)
    try:
        found = estimates_for(items, None, grades, threshold, labelled).estimates[0]
    except MMJudgeError:  # the estimate extra is not installed: say nothing about it
        return None
    ppi, alone = found.ppi, found.human_only
    how = f", within each of {found.strata} queries" if found.strata > 1 else ""
    return join(
        f"{num(ppi[0])} [{num(ppi[1])}, {num(ppi[2])}] with {analysis.judge_name(best.judge)}'s "
        f"labels on the {int((~labelled).sum()):,} items no person graded "
        f"(prediction-powered{how}), "
        f"against {num(alone[0])} [{num(alone[1])}, {num(alone[2])}] from the "
        f"{int(labelled.sum()):,} human labels alone; worth {found.effective_n:,.0f} human labels."
    )
