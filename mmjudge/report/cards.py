"""The answer at the top of the page: one card per dataset, then a few lines on ensembles.

A card names the recommended judge (the cheapest judge not distinguishable from the best
whose κ interval lies above 0, or the choice of a race that decided in the dataset's folder:
:func:`mmjudge.report.verdicts.recommended`; when that race chose another judge, the card says
why in one line), the best judge,
what the image adds on that dataset and where the best κ sits between chance (κ 0) and the
human ceiling. When no judge's interval lies above 0 the card recommends none and says
plainly that no judge agrees with people better than chance. Every number is the one the
tables show (the cell's score, the paired comparisons of :mod:`mmjudge.report.analysis`);
nothing is computed here.
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
)
from mmjudge.report.card_labels import label_lines
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
from mmjudge.report.verdicts import at_chance, baseline, best_role, race_note, raced, recommended


@dataclass
class Card:
    dataset: str
    anchor: str
    recommended: Markup | None
    """The judge to use; None when none can be recommended (see ``verdict``)."""
    why: Markup
    best: Markup
    image: Markup
    ceiling: Markup
    """Chance, the best κ and the human–human κ on one line."""
    baseline: Markup | None = None
    ensembles: list[Markup] = field(default_factory=list)
    verdict: Markup | None = None
    """Why no judge is recommended (set exactly when ``recommended`` is None)."""
    best_title: str = "Best"
    """``Best``, or ``Highest κ`` when that judge may be no better than chance."""
    labels: Markup | None = None
    """How many more human labels would tell the best judge from the runner-up."""
    split: Markup | None = None
    """With a human price: the split of those labels' cost between human and judge labels."""
    mean_grade: Markup | None = None
    """The mean grade and share relevant prediction-powered beside human-only (items no
    person graded)."""
    systems: Markup | None = None
    """With run files: each system's nDCG@10 prediction-powered beside human-only."""
    race_note: Markup | None = None
    """Why the race in the dataset's folder chose another judge, in one line (None when
    there is no race or they agree)."""


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
    if stats.race is not None and stats.race.decided and chosen is raced(stats):
        return join(stats.race.why())
    if len(stats.ranked) == 1:
        return join("The only judge with a κ on this dataset.")
    if chosen is best:
        cheaper = [c for c in stats.best_vs_others if c.b.usd_per_million < best.usd_per_million]
        if not cheaper:
            return join("It is also the cheapest of the judges that match it.")
        if any(not c.distinguishable for c in cheaper):
            return join(
                "The cheaper judges that match it may be no better than chance (their κ "
                "intervals reach 0); every other cheaper judge is distinguishably worse."
            )
        how = "weighted 1/π on the asked grades" if stats.asked is not None else "bootstrap"
        return join(f"Every cheaper judge is distinguishably worse (paired {how}).")
    paired = next((c for c in stats.best_vs_others if c.b is chosen), None)
    evidence = f": {difference(paired)}" if paired is not None else ""
    role = best_role(stats)
    return join(
        f"The cheapest judge above chance and {NOT_DISTINGUISHABLE} from the {role}{evidence}."
    )


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
    """Chance, the top judge's κ and the human–human κ on one line, lowest first."""
    ceiling = stats.ceiling
    best = stats.ranked[0]
    role = "best judge" if best.kappa.above_chance else "highest judge"
    line = f"chance 0 · {role} {interval(best.kappa)} · "
    if ceiling is None and stats.asked is not None:
        return join(line, "humans – (the dataset holds no grade of its own: no human–human κ).")
    if ceiling is None:
        return join(line, "humans – (fewer than two annotators: no human–human κ).")
    value = num(ceiling[0]) if ceiling[0] == ceiling[1] else f"{num(ceiling[0])}–{num(ceiling[1])}"
    pairs = len(stats.human_pairs)
    return join(
        line, f"humans {value} (annotators with each other, {pairs} pair{'s' * (pairs > 1)})."
    )


def _no_recommendation(analysis: Analysis, stats: DatasetStats) -> Markup:
    """Why no judge is recommended: none agrees with people better than chance, or those
    that do are distinguishably below a judge that may not."""
    best = stats.ranked[0]
    shown = join(Markup("<b>{}</b>").format(analysis.judge_name(best.judge)))
    value = f"κ {interval(best.kappa)}"
    if at_chance(stats):
        return join(
            "No judge on this dataset agrees with people better than chance: every judge's "
            "95% interval reaches κ 0 (a judge answering at random) or lies below it. The "
            "highest κ is ",
            shown,
            f" — {value}.",
        )
    return join(
        "No judge can be recommended: the highest κ, ",
        shown,
        f" — {value}, may be no better than chance (its interval reaches 0), and every "
        "judge whose interval lies above 0 is distinguishably below it.",
    )


def _race_note(stats: DatasetStats, chosen: Cell | None) -> Markup | None:
    note = race_note(stats, chosen)
    return None if note is None else join(note)


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
        top = f"the {best_role(stats)} judge"
        verdict = (
            f"{NOT_DISTINGUISHABLE} from {top}"
            if not c.distinguishable
            else f"above {top}"
            if c.difference > 0
            else f"below {top}"
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


def cards(
    analysis: Analysis,
    human_cost_per_label: float | None = None,
    label_budget_usd: float | None = None,
) -> list[Card]:
    """One card per dataset with a ranked judge; ``human_cost_per_label`` (USD) prices the
    labels the card asks for, and ``label_budget_usd`` is the budget its Label budget line
    splits (default: what those labels cost)."""
    out = []
    for index, stats in enumerate(analysis.datasets):
        if not stats.ranked:
            continue
        chosen = recommended(stats)
        free = baseline(stats.cells)
        labels = label_lines(analysis, stats, human_cost_per_label, label_budget_usd)
        out.append(
            Card(
                dataset=stats.name,
                anchor=dataset_anchor(index, stats.name),
                recommended=_judge(analysis, chosen) if chosen is not None else None,
                verdict=_no_recommendation(analysis, stats) if chosen is None else None,
                why=_why(stats, chosen) if chosen is not None else Markup(""),
                best=_judge(analysis, stats.ranked[0]),
                best_title=best_role(stats).capitalize(),
                image=_image(stats),
                ceiling=_ceiling(stats),
                baseline=_judge(analysis, free) if free is not None else None,
                ensembles=_ensemble_lines(analysis, stats),
                labels=labels.more,
                split=labels.split,
                mean_grade=labels.mean_grade,
                systems=labels.systems,
                race_note=_race_note(stats, chosen),
            )
        )
    return out
