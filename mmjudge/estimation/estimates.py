"""Prediction-powered estimates from a human and a judge's label files, with a random part of
the human labels held back: what ``mmjudge estimate`` computes and prints.

The labelled subset is a simple random sample of the items both files grade; the held-back
human labels give the value each estimate aims at ("all human labels"), so the three ways of
estimating (:mod:`mmjudge.estimation.prediction`) can be compared with it, and so can the
orderings of the systems they give (Kendall's τ-b).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mmjudge.errors import MMJudgeError
from mmjudge.estimation import prediction, strata
from mmjudge.estimation.prediction import Estimate, ItemLabels
from mmjudge.metrics.ranking import kendall_tau

MEASURES = ("nDCG", "P")

#: The fewest labelled items at which each system measure's 95% intervals held the truth in
#: at least 94% of 1,000 draws on the LLMJudge files with each of three judges
#: (``benchmarks/estimate_coverage.py``, docs/estimates.md; at 300 labels nDCG@10 fell to
#: 0.913 and P@10 to 0.917 for some system and judge); below it the command says so.
COVERED_FROM = {f"nDCG@{prediction.DEPTH}": 500, f"P@{prediction.DEPTH}": 500}

#: From this many labels (drawn with equal chances) the human-only 95% intervals of the mean
#: grade and the share relevant held the truth in at least 93% of 1,000 draws at every size
#: measured up to 300; below it in as few as :data:`HUMAN_ONLY_LOWEST` (the share relevant
#: at 2 labels), while PPI++'s held at least :data:`PPI_LOWEST` at every size from 2 to 300
#: with each of the seven LLMJudge judges (``benchmarks/estimate_few_labels.py``,
#: docs/estimates.md). Below it the command says to read PPI++.
HUMAN_ONLY_HOLDS_FROM = 5
HUMAN_ONLY_LOWEST = 0.921
PPI_LOWEST = 0.931

#: With labels drawn with unequal chances (``--sample``) the means keep ppi_py's normal
#: intervals, which (from draws with equal chances, before the pseudo-items) held the truth in
#: fewer than 94% of draws below this many labels: the caution for them stays as it was.
WEIGHTED_FROM = 200


class RankingCheck(NamedTuple):
    """How one measure's estimates order the systems, against each other and the truth."""

    measure: str
    ppi_vs_human_only: float
    """τ-b between the prediction-powered and the human-only estimates."""
    ppi_vs_truth: float
    """τ-b between the prediction-powered estimates and the values on all human labels."""
    human_only_vs_truth: float
    judge_only_vs_truth: float


class HeldBack(NamedTuple):
    """Every estimate of one held-back draw, with the truth and the system rankings."""

    items: int
    """Items both files grade."""
    labelled: int
    estimates: list[Estimate]
    truth: dict[str, float] | None
    """Each quantity on all the human labels (held back from the estimates); ``None`` when
    not every item has a human label."""
    rankings: list[RankingCheck]
    weighted: bool = False
    """The labelled items were drawn with unequal chances (``--sample``)."""


def check_labelled(n: int, items: int, flag: str = "--labelled") -> None:
    """A labelled-subset size the estimates can use: at least 2 and leaving 2 unlabelled."""
    if n < 2 or n > items - 2:
        raise MMJudgeError(
            f"{flag} {n}: needs at least 2 labelled and 2 unlabelled items of the {items} "
            f"both files grade; pass a number from 2 to {max(items - 2, 2)}"
        )


def held_back(
    items: ItemLabels,
    systems: Mapping[str, Mapping[str, Mapping[str, float]]] | None,
    grades: Sequence[float],
    relevant_from: float,
    n: int,
    seed: int,
) -> HeldBack:
    """The estimates from a random ``n`` of the human labels (``seed``), beside the truth."""
    check_labelled(n, items.human.size)
    labelled = prediction.draw_labelled(items.human.size, n, seed)
    return estimates_for(items, systems, grades, relevant_from, labelled)


def estimates_for(
    items: ItemLabels,
    systems: Mapping[str, Mapping[str, Mapping[str, float]]] | None,
    grades: Sequence[float],
    relevant_from: float,
    labelled: Any,
    probabilities: Any = None,
) -> HeldBack:
    """The estimates from the human labels of the ``labelled`` items (drawn with
    ``probabilities``, one per labelled item, when not equally), beside the truth when
    every item has a human label."""
    mask = np.asarray(labelled, dtype=bool)
    design = prediction.prepare(items, systems, grades, relevant_from)
    estimates = prediction.estimate(design, items, mask, probabilities=probabilities)
    complete = not np.isnan(items.human).any()
    truth = prediction.exact_values(design, items.human) if complete else None
    rankings = [ranking_check(m, estimates, truth) for m in MEASURES] if systems else []
    weighted = probabilities is not None
    return HeldBack(items.human.size, int(mask.sum()), estimates, truth, rankings, weighted)


def coverage_caution(result: HeldBack) -> str | None:
    """One line saying which interval to read, and why, where the measured coverage says to
    take care: the means from a draw with equal chances below :data:`HUMAN_ONLY_HOLDS_FROM`
    (read PPI++), the means from a draw with unequal chances below :data:`WEIGHTED_FROM`,
    and the system measures below :data:`COVERED_FROM` (read as a guide); ``None``
    otherwise."""
    clauses = []
    n = result.labelled
    if not result.weighted and n < HUMAN_ONLY_HOLDS_FROM:
        clauses.append(
            f"for the mean grade and share relevant read PPI++: below {HUMAN_ONLY_HOLDS_FROM} "
            f"labels their human-only 95% intervals held the truth in as few as "
            f"{HUMAN_ONLY_LOWEST:.0%} of simulated draws on real labels, PPI++'s in at least "
            f"{PPI_LOWEST:.0%}"
        )
    if result.weighted and n < WEIGHTED_FROM:
        clauses.append(
            "with labels drawn with unequal chances the mean grade's and share relevant's 95% "
            "intervals are ppi-python's normal ones, which held the truth in fewer than 94% of "
            f"simulated draws on real labels below {WEIGHTED_FROM} labels: read them as a guide"
        )
    below = [m for m, covered in COVERED_FROM.items() if result.rankings and n < covered]
    if below:
        clauses.append(
            f"the 95% intervals of {' and '.join(below)} held the truth in fewer than 94% of "
            f"simulated draws on real labels below {max(COVERED_FROM[m] for m in below):,} "
            "labels: read them as a guide"
        )
    if not clauses:
        return None
    return f"caution ({n} labelled): " + "; ".join(clauses)


def clipped_line(result: HeldBack) -> str | None:
    """One line naming the estimates whose interval was cut to the values the quantity can
    take (the scale's range for the mean grade, 0 to 1 for the rest)."""
    cut = [e.name for e in result.estimates if e.clipped]
    if not cut:
        return None
    return (
        f"clipped: {', '.join(cut)}: the interval reached past what the quantity can take "
        "(the scale's range for the mean grade, 0 to 1 otherwise) and was cut to it"
    )


def outside_line(result: HeldBack) -> str | None:
    """One line naming the estimates with an interval wholly outside the values the
    quantity can take, shown as it came (:func:`mmjudge.estimation.small_sample.fit`)."""
    found = [e.name for e in result.estimates if e.outside]
    if not found:
        return None
    return (
        f"outside: {', '.join(found)}: an interval lies wholly outside what the quantity can "
        "take and is shown as it came, not cut to a point; it cannot hold the value: read "
        "the human-only interval, and label more items"
    )


def no_width_line(result: HeldBack) -> str | None:
    """One line naming the estimates given no interval because the labelled items' values of
    the quantity do not vary (:func:`mmjudge.estimation.small_sample.fit`)."""
    found = [e.name for e in result.estimates if e.no_width]
    if not found:
        return None
    return (
        f"no interval: {', '.join(found)}: the labelled items' values of it do not vary (none "
        "in the system's top tens, say), which would make an interval of no width; shown as "
        "'-': label more items"
    )


def notes(result: HeldBack) -> list[str]:
    """The lines the output gives above the table, in order: which interval to read, and
    what was cut, left uncut or left out."""
    found = (
        coverage_caution(result),
        clipped_line(result),
        outside_line(result),
        no_width_line(result),
    )
    return [line for line in found if line]


def strata_line(result: HeldBack) -> str:
    """Whether the mean grade and the share of relevant items were estimated per query
    (:mod:`mmjudge.estimation.strata`) or pooled over all items, and the rule that chose."""
    means = [e for e in result.estimates if e.name in strata.COLUMNS]
    used = max((e.strata for e in means), default=1)
    rule = (
        f"every query has at least {strata.MIN_LABELLED_PER_QUERY} labelled items and 2 "
        "unlabelled, drawn with equal chances"
    )
    if used > 1:
        return f"mean grade and share relevant: PPI++ within each of {used} queries ({rule})"
    return (
        f"mean grade and share relevant: PPI++ pooled over all items (per query only when {rule})"
    )


def top_ten_line(result: HeldBack) -> str | None:
    """With systems, how many of their measures were estimated in the system's top tens and
    outside them apart (:func:`mmjudge.estimation.strata.split_by_top_ten`), and the rule."""
    systems = [e for e in result.estimates if e.name not in strata.COLUMNS]
    if not systems:
        return None
    split = sum(e.strata == 2 for e in systems)
    return (
        f"system measures: {split} of {len(systems)} estimated within the system's top tens "
        f"and outside them apart, t interval (when each part has {strata.MIN_PER_PART} "
        f"labelled and {strata.MIN_PER_PART} unlabelled items; pooled otherwise)"
    )


def ranking_check(
    measure: str, estimates: Sequence[Estimate], truth: Mapping[str, float] | None
) -> RankingCheck:
    """τ-b between the system orderings of one measure (``nDCG`` or ``P``) at depth 10."""
    name = f"{measure}@{prediction.DEPTH}"
    found = prediction.pick(estimates, name)
    names = list(found)
    ppi = np.array([found[s].ppi[0] for s in names])
    human = np.array([found[s].human_only[0] for s in names])
    judge = np.array([found[s].judge_only for s in names])
    true = np.array([(truth or {}).get(f"{name} {s}", math.nan) for s in names])
    return RankingCheck(
        name,
        kendall_tau(ppi, human),
        kendall_tau(ppi, true),
        kendall_tau(human, true),
        kendall_tau(judge, true),
    )


def _number(value: float) -> float | None:
    """A value for the JSON: ``None`` (``null``) where it is not finite."""
    return value if math.isfinite(value) else None


def _way(triple: tuple[float, float, float]) -> dict[str, float | None]:
    """An (estimate, low, high) for the JSON, with its width; ``null`` where undefined."""
    return {
        "estimate": _number(triple[0]),
        "low": _number(triple[1]),
        "high": _number(triple[2]),
        "width": _number(triple[2] - triple[1]),
    }


def effective_cell(e: Estimate) -> str:
    """The effective sample size and its gain over the labelled items, as printed
    ("-" where undefined; "capped" where cut to the items estimated over)."""
    if math.isnan(e.effective_n):
        return "-"
    text = f"{e.effective_n:.0f} ({e.effective_n - e.n_labelled:+.0f})"
    return text + " capped" if e.capped else text


def capped_line(result: HeldBack) -> str | None:
    """One line when an effective sample size was cut to the number of items."""
    if not any(e.capped for e in result.estimates):
        return None
    return (
        f"capped: an effective n above the {result.items:,} items is shown as {result.items:,}, "
        "since labelling every item is the most human labels can do"
    )


def as_dict(result: HeldBack) -> dict[str, Any]:
    """The JSON form (``null`` = undefined)."""
    rows = []
    for e in result.estimates:
        rows.append(
            {
                "name": e.name,
                "truth": None if result.truth is None else _number(result.truth[e.name]),
                "human_only": _way(e.human_only),
                "judge_only": {"estimate": _number(e.judge_only), "biased": True},
                "ppi": {**_way(e.ppi), "lam": _number(e.lam), "strata": e.strata},
                "effective_n": _number(e.effective_n),
                "effective_n_gained": _number(e.effective_n - e.n_labelled),
                "effective_n_capped": e.capped,
                "clipped": e.clipped,
                "outside": e.outside,
                "no_interval": e.no_width,
            }
        )
    return {
        "items": result.items,
        "labelled": result.labelled,
        "caution": coverage_caution(result),
        "clipped": clipped_line(result),
        "outside": outside_line(result),
        "no_interval": no_width_line(result),
        "stratified": strata_line(result),
        "split_by_top_ten": top_ten_line(result),
        "estimates": rows,
        "rankings": [
            {key: (_number(v) if isinstance(v, float) else v) for key, v in r._asdict().items()}
            for r in result.rankings
        ],
    }
