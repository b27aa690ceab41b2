"""The answer at the top of the page: one card per dataset, then a few lines on ensembles.

A card names the recommended judge (the cheapest judge not distinguishable from the best,
:func:`mmjudge.report.analysis.recommended`), the best judge, what the image adds on that
dataset and the human ceiling. Every number is the one the tables show (the cell's score,
the paired comparisons of :mod:`mmjudge.report.analysis`); nothing is computed here.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from markupsafe import Markup

from mmjudge.report.analysis import (
    MODALITY_NAMES,
    Analysis,
    Cell,
    DatasetStats,
    baseline,
    recommended,
)
from mmjudge.report.findings.prose import (
    NOT_DISTINGUISHABLE,
    dataset_anchor,
    difference,
    interval,
    join,
    num,
    usd,
)
from mmjudge.report.style import ensemble_label


@dataclass
class Card:
    dataset: str
    anchor: str
    recommended: Markup
    why: Markup
    best: Markup
    image: Markup
    ceiling: Markup
    baseline: Markup | None = None
    ensembles: list[Markup] = field(default_factory=list)


def _judge(analysis: Analysis, cell: Cell) -> Markup:
    split = ""
    image, text = cell.cost_split
    if image > 0:
        split = f" (image {_short(usd(image))}, text {_short(usd(text))})"
    return join(
        Markup("<b>{}</b>").format(analysis.judge_name(cell.judge)),
        f" — κ {interval(cell.kappa)}, {usd(cell.usd_per_million)}{split}",
    )


def _short(text: str) -> str:
    return text.removesuffix(" per million")


def _why(stats: DatasetStats, chosen: Cell) -> Markup:
    best = stats.ranked[0]
    if len(stats.ranked) == 1:
        return join("The only judge with a κ on this dataset.")
    if chosen is best:
        cheaper = [c for c in stats.best_vs_others if c.b.usd_per_million < best.usd_per_million]
        if not cheaper:
            return join("It is also the cheapest of the judges that match it.")
        return join("Every cheaper judge is distinguishably worse (paired bootstrap).")
    paired = next((c for c in stats.best_vs_others if c.b is chosen), None)
    evidence = f": {difference(paired)}" if paired is not None else ""
    return join(f"The cheapest judge {NOT_DISTINGUISHABLE} from the best{evidence}.")


def _image(stats: DatasetStats) -> Markup:
    """Image + text and image only against text only, over the models that ran both."""
    parts = []
    for modality, name in (("mm", "Image + text"), ("image", "Image only")):
        found = [c for c in stats.modality_effects if c.a.judge.modality == modality]
        if not found:
            continue
        helps = sum(c.distinguishable and c.difference > 0 for c in found)
        hurts = sum(c.distinguishable and c.difference < 0 for c in found)
        median = statistics.median(c.difference for c in found)
        parts.append(
            f"{name} vs text only: helps in {helps}, hurts in {hurts}, {NOT_DISTINGUISHABLE} "
            f"in {len(found) - helps - hurts} of {len(found)} (median Δκ {num(median, sign=True)})"
        )
    if not parts:
        return join("No model ran here both with and without the image.")
    return join("; ".join(parts), ".")


def _ceiling(stats: DatasetStats) -> Markup:
    ceiling = stats.ceiling
    if ceiling is None:
        return join("Fewer than two annotators: no human–human κ.")
    value = num(ceiling[0]) if ceiling[0] == ceiling[1] else f"{num(ceiling[0])}–{num(ceiling[1])}"
    pairs = len(stats.human_pairs)
    return join(f"Annotators agree with each other at κ {value} ({pairs} pair{'s' * (pairs > 1)}).")


def _ensemble_lines(analysis: Analysis, stats: DatasetStats) -> list[Markup]:
    """Ensembles that sit on the frontier of judges and ensembles, against the best judge."""
    lines = []
    # the ensembles that match or beat the best judge first, cheapest first
    ordered = sorted(
        stats.ensemble_vs_best,
        key=lambda c: (c.distinguishable and c.difference < 0, c.a.usd_per_million),
    )
    for c in ordered:
        ensemble = c.a
        verdict = (
            f"{NOT_DISTINGUISHABLE} from the best judge"
            if not c.distinguishable
            else "above the best judge"
            if c.difference > 0
            else "below the best judge"
        )
        lines.append(
            join(
                f"{'A panel' if ensemble.kind == 'panel' else 'A cascade'} of "
                f"{ensemble_label(ensemble.judge.model)} "
                f"({MODALITY_NAMES.get(ensemble.judge.modality, ensemble.judge.modality)}) reaches "
                f"κ {interval(ensemble.kappa)} at {usd(ensemble.usd_per_million)}: {verdict} "
                f"({difference(c)})."
            )
        )
    return lines


def cards(analysis: Analysis) -> list[Card]:
    out = []
    for index, stats in enumerate(analysis.datasets):
        chosen = recommended(stats)
        if chosen is None:
            continue
        free = baseline(stats.cells)
        out.append(
            Card(
                dataset=stats.name,
                anchor=dataset_anchor(index, stats.name),
                recommended=_judge(analysis, chosen),
                why=_why(stats, chosen),
                best=_judge(analysis, stats.ranked[0]),
                image=_image(stats),
                ceiling=_ceiling(stats),
                baseline=_judge(analysis, free) if free is not None else None,
                ensembles=_ensemble_lines(analysis, stats),
            )
        )
    return out
