"""The card's lines about human labels: how many more would tell the best judge from the
runner-up (and, with ``report.human_cost_per_label``, what they cost and how that money, or
the budget ``report.label_budget_usd`` gives, is best split between human and judge labels),
and the mean grade estimated with the best
judge's labels on the items people have not graded (prediction-powered) beside the human
labels alone.

Every number comes from :mod:`mmjudge.metrics` (``planning`` for the labels and the split,
``estimates`` for the mean grade), computed as ``mmjudge plan`` and ``mmjudge estimate``
compute them. The prediction-powered lines need the ``estimate`` extra; without it they are
left out, and nothing here stops a report.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from markupsafe import Markup

from mmjudge.display import bracketed, number, usd
from mmjudge.errors import MMJudgeError
from mmjudge.estimation.estimates import COVERED_FROM, estimates_for
from mmjudge.estimation.planning import budget_split, extra_labels, plan_separation
from mmjudge.estimation.prediction import DEPTH, Estimate, ItemLabels, pick
from mmjudge.metrics import scoring
from mmjudge.report.analysis import Analysis, Cell, DatasetStats
from mmjudge.report.findings.prose import join, num, typographic
from mmjudge.report.leaderboard import system_runs


class LabelLines(NamedTuple):
    """The card's label lines (``None``: not shown)."""

    more: Markup | None
    """How many more labelled items (and dollars) would separate the best two judges."""
    split: Markup | None
    """The split of those dollars between human and judge labels."""
    mean_grade: Markup | None
    """The mean grade and the share relevant, human-only beside prediction-powered."""
    systems: Markup | None = None
    """With run files: each system's nDCG@10, human-only beside prediction-powered."""


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
    mean_grade, systems = _predicted(analysis, stats)
    return LabelLines(more, split, mean_grade, systems)


def _more_labels(
    analysis: Analysis, stats: DatasetStats, price: float | None
) -> tuple[Markup | None, float | None]:
    """The labels that would tell the best judge from the runner-up
    (:func:`mmjudge.estimation.planning.plan_separation` on the paired comparison the
    tables show), and what they cost (``None`` without a price or when none are needed, and
    on grades a race asked for: the planning assumes uniformly drawn labels, and the race
    asks for those its decision needs)."""
    if not stats.best_vs_others or stats.asked is not None:
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
    priced = "" if spend is None else f", about {usd(spend)}"
    line = join(
        f"To separate {best} from {runner} you need about {more:,.0f} more labelled items"
        f"{priced} (≈{math.ceil(found.needed):,} in all; now {shared}, Δκ "
        f"{num(found.difference, sign=True)} ± {num(found.half_width)})"
        + ("." if spend is not None else "; report.human_cost_per_label prices them.")
    )
    return line, spend


def _paired(stats: DatasetStats, cell: Cell) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The consensus, the judge's grade and the item number of each item the judge graded
    (``nan`` consensus where no person graded it; unparseable answers left out)."""
    if cell.labels is None:
        return np.empty(0), np.empty(0), np.empty(0, dtype=np.intp)
    judge = np.asarray(cell.labels.label, dtype=float)
    codes = np.asarray(cell.labels.items)
    human = np.asarray(stats.items.consensus, dtype=float)[codes]
    keep = ~np.isnan(judge)
    return human[keep], judge[keep], codes[keep]


def _split(stats: DatasetStats, best: Cell, spend: float, price: float) -> Markup | None:
    """How ``spend`` dollars narrow the mean grade's interval most, split between human
    labels and judge-only labels (:func:`mmjudge.estimation.planning.budget_split`)."""
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
        f"For the mean grade, {usd(spend)} goes furthest as {found.human_labels:,} human "
        f"labels with the best judge on {rest}: as narrow an interval as {found.effective_n:,.0f} "
        f"human labels alone, against {found.human_only_n:,} bought without the judge "
        f"(judge–human correlation {num(found.correlation)})."
    )


def _predicted(analysis: Analysis, stats: DatasetStats) -> tuple[Markup | None, Markup | None]:
    """The mean grade and the share of relevant results from the human labels alone and
    prediction-powered with the best judge's labels on the items no person graded (only when
    there are such items); with the dataset's run files, each system's nDCG@10 the same two
    ways."""
    best = stats.ranked[0]
    human, judge, codes = _paired(stats, best)
    grades = sorted(stats.grades)
    on_scale = np.isin(judge, grades)
    human, judge, codes = human[on_scale], judge[on_scale], codes[on_scale]
    labelled = ~np.isnan(human)
    if labelled.sum() < 2 or (~labelled).sum() < 2:
        return None, None
    pairs = [stats.items.keys[code].split("\t", 1) for code in codes]
    items = ItemLabels([q for q, _ in pairs], [d for _, d in pairs], human, judge)
    threshold = scoring.relevance_threshold(np.asarray(grades, dtype=float), stats.relevant_from)
    runs = system_runs(best.summary.dataset_config())
    try:
        found = estimates_for(items, runs, grades, threshold, labelled).estimates
    except MMJudgeError:  # the estimate extra is not installed: say nothing about it
        return None, None
    mean, share = found[0], found[1]
    how = f", within each of {mean.strata} queries" if mean.strata > 1 else ""
    alone = f"from the {int(labelled.sum()):,} human labels alone"
    line = join(
        f"{_interval(mean.ppi)} with {analysis.judge_name(best.judge)}'s labels on the "
        f"{int((~labelled).sum()):,} items no person graded (prediction-powered{how}), "
        f"against {_interval(mean.human_only)} {alone}; worth {mean.effective_n:,.0f} human "
        f"labels. Share of relevant results: {_interval(share.ppi)} against "
        f"{_interval(share.human_only)}."
    )
    return line, _systems_line(found, int(labelled.sum())) if runs else None


def _interval(triple: tuple[float, float, float]) -> str:
    return typographic(bracketed(*triple, show=lambda x: number(x, 2)))


#: The most systems the card names; the rest are counted.
CARD_SYSTEMS = 8


def _systems_line(found: list[Estimate], n_labelled: int) -> Markup:
    """Each system's nDCG@10, prediction-powered and from the human labels alone, best first
    (the first :data:`CARD_SYSTEMS`), with the caution ``mmjudge estimate`` gives below the
    labelled count its intervals were measured to cover from."""
    measure = f"nDCG@{DEPTH}"
    by_system = pick(found, measure)
    order = sorted(by_system, key=lambda name: -by_system[name].ppi[0])
    shown = [
        f"{name} {_interval(by_system[name].ppi)} "
        f"(human labels alone {_interval(by_system[name].human_only)})"
        for name in order[:CARD_SYSTEMS]
    ]
    more = len(order) - CARD_SYSTEMS
    text = f"{measure}, prediction-powered: " + "; ".join(shown)
    if more > 0:
        text += f"; and {more} more"
    text += "."
    if n_labelled < COVERED_FROM[measure]:
        text += (
            f" With {n_labelled:,} human labels, fewer than the {COVERED_FROM[measure]:,} its "
            "intervals were measured to hold the truth from, read them as a guide."
        )
    return join(text)
