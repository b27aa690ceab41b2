"""Q1: does a judge's agreement depend on the use case (the dataset)?

A judge run on several datasets differs across them when the intervals of its highest and
lowest κ do not overlap (the datasets are independent samples, so no paired test)."""

from __future__ import annotations

from typing import NamedTuple

from markupsafe import Markup

from mmjudge.report.analysis import Analysis, Cell, Judge
from mmjudge.report.findings.answer import Answer, add_points, dataset_link, left_out
from mmjudge.report.findings.prose import (
    FIG_BY_DATASET,
    NOT_DISTINGUISHABLE,
    TABLE_BY_DATASET,
    capped,
    interval,
    join,
    link,
    listed,
    num,
)


class Spread(NamedTuple):
    """One judge's κ across the datasets it ran on, and whether they differ beyond noise."""

    judge: Judge
    distinct: bool
    key: tuple[bool, float]
    """Where its point goes: judges that differ first, the widest spread first."""
    text: Markup


def use_case(analysis: Analysis) -> Answer:
    """Q1: does a judge's agreement depend on the dataset?"""
    answer = Answer(
        "q1",
        "Does judge quality depend on the use case (dataset)?",
        sources=[link(FIG_BY_DATASET, "κ by dataset figure"), link(TABLE_BY_DATASET, "table")],
    )
    if len(analysis.datasets) < 2:
        _one_dataset(analysis, answer)
        return answer
    several = _judges_on_several_datasets(analysis)
    spreads = [_spread(analysis, judge, entries) for judge, entries in sorted(several.items())]
    add_points(answer, [(s.key, s.text) for s in spreads], "the κ by dataset table")
    answer.points += _ceiling_point(analysis)
    answer.lead = _lead(analysis, len(several), [s.judge for s in spreads if s.distinct])
    return answer


def _judges_on_several_datasets(analysis: Analysis) -> dict[Judge, list[tuple[str, Cell]]]:
    """Judge → (dataset, cell) for every judge with a κ on more than one dataset."""
    by_judge: dict[Judge, list[tuple[str, Cell]]] = {}
    for stats in analysis.datasets:
        for cell in stats.ranked:
            by_judge.setdefault(cell.judge, []).append((stats.name, cell))
    return {judge: entries for judge, entries in by_judge.items() if len(entries) > 1}


def _spread(analysis: Analysis, judge: Judge, entries: list[tuple[str, Cell]]) -> Spread:
    high = max(entries, key=lambda e: e[1].kappa.estimate)
    low = min(entries, key=lambda e: e[1].kappa.estimate)
    distinct = not high[1].kappa.overlaps(low[1].kappa)
    values = [f"{interval(cell.kappa)} on {name}" for name, cell in entries]
    verdict = (
        f"differs across datasets ({high[0]} above {low[0]}; their intervals do not overlap)"
        if distinct
        else f"{NOT_DISTINGUISHABLE} across datasets (the intervals overlap)"
    )
    spread = high[1].kappa.estimate - low[1].kappa.estimate
    text = join(analysis.judge_name(judge), ": κ ", "; ".join(values), " — ", verdict, ".")
    return Spread(judge, distinct, (not distinct, -spread), text)


def _lead(analysis: Analysis, several: int, differs: list[Judge]) -> Markup:
    """The answer's first sentence, from how many of the ``several`` judges run on more than
    one dataset differ across them."""
    if not several:
        return join(
            "No judge ran on more than one dataset, so this cannot be answered from this sweep."
        )
    if not differs:
        return join(
            f"No difference is distinguishable: for each of the {several} judges that ran "
            "on more than one dataset, the κ intervals overlap across datasets "
            f"({NOT_DISTINGUISHABLE})."
        )
    which = capped([analysis.judge_name(j) for j in differs])
    rest = (
        f"; for the other {several - len(differs)} the differences are {NOT_DISTINGUISHABLE}"
        if len(differs) < several
        else ""
    )
    return join(
        f"Yes, for {len(differs)} of the {several} judges run on more than one "
        f"dataset ({which}): κ differs between datasets by more than noise{rest}."
    )


def _ceiling_point(analysis: Analysis) -> list[Markup]:
    """The human–human κ of every dataset, as one point (none without assessor pairs)."""
    ceilings = []
    for stats in analysis.datasets:
        ceiling = stats.ceiling
        if ceiling is not None:
            text = num(ceiling[0]) if ceiling[0] == ceiling[1] else f"{num(ceiling[0])}–"
            text = text if ceiling[0] == ceiling[1] else text + num(ceiling[1])
            ceilings.append(join(dataset_link(analysis, stats), " ", text))
    if not ceilings:
        return []
    return [
        join(
            "The human–human κ (the ceiling a judge is held to) is ",
            listed(ceilings),
            "; a dataset where humans agree less leaves less room for any judge.",
        )
    ]


def _one_dataset(analysis: Analysis, answer: Answer) -> None:
    """Q1's answer when at most one dataset has completed cells."""
    names = [d.name for d in analysis.datasets]
    others = [u for u in analysis.not_analysed if u.dataset not in names]
    note = left_out(analysis, lambda u: u in others)
    if note is not None:
        head = f"Only {names[0]} has completed cells" if names else "No cell completed"
        answer.lead = join(
            f"{head}: the cells on the other datasets failed or were stopped, so a judge's κ "
            "cannot be compared across use cases here."
        )
        answer.points.append(note)
        return
    answer.lead = join(
        f"This report holds one dataset ({', '.join(names) or 'none'}), so a judge's κ "
        "cannot be compared across use cases here; add datasets to the sweep."
    )
