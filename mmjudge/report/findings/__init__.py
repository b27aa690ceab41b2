"""Plain-language answers to the report's four questions, written from the numbers.

Each answer is a lead sentence and a list of points, as HTML fragments: every value that
comes from a config or a dataset is escaped (``markupsafe``), and links point at the
figure or table an answer rests on. A difference within noise is called "not
distinguishable": a paired bootstrap interval that contains 0, or, for judges on different
datasets, 95% intervals that overlap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from mmjudge.report.analysis import (
    IMAGE_MODALITIES,
    MODALITY_NAMES,
    Analysis,
    Cell,
    Comparison,
    DatasetStats,
    Interval,
    Judge,
    Unfinished,
    recommended,
)

FIG_COST = "fig-kappa-cost"
FIG_BY_DATASET = "fig-kappa-by-dataset"
FIG_IMAGE = "fig-image-vs-text"
TABLE_BY_DATASET = "kappa-by-dataset"
TABLE_IMAGE = "image-vs-text"
TABLE_FRONTIER = "frontier"
TABLE_UNFINISHED = "unfinished"
NOT_DISTINGUISHABLE = "not distinguishable"


@dataclass
class Answer:
    anchor: str
    question: str
    lead: Markup
    points: list[Markup] = field(default_factory=list)
    sources: list[Markup] = field(default_factory=list)


# --------------------------------------------------------------------------- formatting


def join(*parts: object) -> Markup:
    """Concatenate, escaping everything that is not already markup."""
    return Markup("").join(escape(p) if not isinstance(p, Markup) else p for p in parts)


def link(anchor: str, text: object) -> Markup:
    return Markup('<a href="#{}">{}</a>').format(anchor, text)


def dataset_anchor(index: int, name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "dataset"
    return f"dataset-{index}-{slug}"


def num(value: float, digits: int = 2, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    text = f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return text.replace("-", "−")


def interval(value: Interval, digits: int = 2) -> str:
    if not value.known:
        return "–"
    if not (math.isfinite(value.low) and math.isfinite(value.high)):
        return num(value.estimate, digits)
    return f"{num(value.estimate, digits)} [{num(value.low, digits)}, {num(value.high, digits)}]"


def p_value(p: float) -> str:
    if not math.isfinite(p):
        return "p = –"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def difference(c: Comparison) -> str:
    """Δκ with its paired interval and p-value, and the items it is on."""
    return (
        f"Δκ {num(c.difference, sign=True)} "
        f"[{num(c.low, sign=True)}, {num(c.high, sign=True)}], {p_value(c.p_value)}, "
        f"on {c.n_items:,} shared items"
    )


def usd(value: float) -> str:
    """Dollars per million judgments, in words."""
    if value == 0:
        return "free"
    if value >= 100:
        return f"${value:,.0f} per million"
    return f"${value:,.2f} per million"


#: Points listed under an answer at most; the rest are counted and left to the tables.
MAX_POINTS = 12
#: Names listed in one sentence at most.
MAX_NAMES = 5


def capped(names: Sequence[str], limit: int = MAX_NAMES) -> str:
    """``a, b, c`` or, past ``limit`` names, ``a, b, c and 7 more``."""
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


def _more(answer: Answer, points: list[tuple[Any, Markup]], where: str) -> None:
    """Add the points, most important (lowest key) first, at most MAX_POINTS of them."""
    points.sort(key=lambda p: p[0])
    answer.points += [text for _, text in points[:MAX_POINTS]]
    if len(points) > MAX_POINTS:
        answer.points.append(join(f"… and {len(points) - MAX_POINTS} more: see {where}."))


def _list(items: Iterable[object], last: str = "and") -> Markup:
    values = [join(i) for i in items]
    if len(values) <= 1:
        return join(*values)
    return join(Markup(", ").join(values[:-1]), f" {last} ", values[-1])


# --------------------------------------------------------------------------- the questions


def answers(analysis: Analysis) -> list[Answer]:
    found = [
        use_case(analysis),
        one_winner(analysis),
        image_effect(analysis),
        frontier(analysis),
    ]
    for answer in (found[1], found[3]):
        note = left_out(analysis, lambda u: True)
        if note is not None:
            answer.points.append(note)
    return found


def _cells_text(analysis: Analysis, cells: list[Unfinished]) -> str:
    shown = [
        f"{analysis.judge_name(u.judge)} on {u.dataset} ({u.status.replace('_', ' ')})"
        for u in cells[:6]
    ]
    more = f" and {len(cells) - 6} more" if len(cells) > 6 else ""
    return "; ".join(shown) + more


def left_out(analysis: Analysis, wanted: Callable[[Unfinished], bool]) -> Markup | None:
    """A point naming the cells that failed or were stopped, when there are any."""
    cells = [u for u in analysis.not_analysed if wanted(u)]
    if not cells:
        return None
    return join(
        f"Left out because they failed or were stopped: {_cells_text(analysis, cells)} (see ",
        link(TABLE_UNFINISHED, "cells that failed or were stopped"),
        ").",
    )


def _anchor(analysis: Analysis, stats: DatasetStats) -> str:
    return dataset_anchor(analysis.datasets.index(stats), stats.name)


def _ceiling_point(analysis: Analysis) -> list[Markup]:
    """The human–human κ of every dataset, as one point (none without assessor pairs)."""
    ceilings = []
    for stats in analysis.datasets:
        ceiling = stats.ceiling
        if ceiling is not None:
            text = num(ceiling[0]) if ceiling[0] == ceiling[1] else f"{num(ceiling[0])}–"
            text = text if ceiling[0] == ceiling[1] else text + num(ceiling[1])
            ceilings.append(join(link(_anchor(analysis, stats), stats.name), " ", text))
    if not ceilings:
        return []
    return [
        join(
            "The human–human κ (the ceiling a judge is held to) is ",
            _list(ceilings),
            "; a dataset where humans agree less leaves less room for any judge.",
        )
    ]


def use_case(analysis: Analysis) -> Answer:
    """Q1: does a judge's agreement depend on the dataset?"""
    answer = Answer(
        "q1",
        "Does judge quality depend on the use case (dataset)?",
        Markup(""),
        sources=[link(FIG_BY_DATASET, "κ by dataset figure"), link(TABLE_BY_DATASET, "table")],
    )
    if len(analysis.datasets) < 2:
        _one_dataset(analysis, answer)
        return answer
    by_judge: dict[Judge, list[tuple[str, Cell]]] = {}
    for stats in analysis.datasets:
        for cell in stats.ranked:
            by_judge.setdefault(cell.judge, []).append((stats.name, cell))
    several = {j: e for j, e in by_judge.items() if len(e) > 1}
    differs = []
    points: list[tuple[Any, Markup]] = []
    for judge, entries in sorted(several.items()):
        high = max(entries, key=lambda e: e[1].kappa.estimate)
        low = min(entries, key=lambda e: e[1].kappa.estimate)
        distinct = not high[1].kappa.overlaps(low[1].kappa)
        values = [f"{interval(cell.kappa)} on {name}" for name, cell in entries]
        verdict = (
            f"differs across datasets ({high[0]} above {low[0]}; their intervals do not overlap)"
            if distinct
            else f"{NOT_DISTINGUISHABLE} across datasets (the intervals overlap)"
        )
        if distinct:
            differs.append(judge)
        spread = high[1].kappa.estimate - low[1].kappa.estimate
        points.append(
            (
                (not distinct, -spread),
                join(analysis.judge_name(judge), ": κ ", "; ".join(values), " — ", verdict, "."),
            )
        )
    _more(answer, points, "the κ by dataset table")
    answer.points += _ceiling_point(analysis)
    if not several:
        answer.lead = join(
            "No judge ran on more than one dataset, so this cannot be answered from this sweep."
        )
    elif differs:
        which = capped([analysis.judge_name(j) for j in differs])
        rest = (
            f"; for the other {len(several) - len(differs)} the differences are "
            f"{NOT_DISTINGUISHABLE}"
            if len(differs) < len(several)
            else ""
        )
        answer.lead = join(
            f"Yes, for {len(differs)} of the {len(several)} judges run on more than one "
            f"dataset ({which}): κ differs between datasets by more than noise{rest}."
        )
    else:
        answer.lead = join(
            f"No difference is distinguishable: for each of the {len(several)} judges that ran "
            "on more than one dataset, the κ intervals overlap across datasets "
            f"({NOT_DISTINGUISHABLE})."
        )
    return answer


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


def _best_sentence(analysis: Analysis, stats: DatasetStats) -> tuple[Markup, bool | None]:
    """The dataset's best judge and whether it is distinguishable from the runner-up."""
    ranked = stats.ranked
    where = link(_anchor(analysis, stats), stats.name)
    if not ranked:
        return join("On ", where, " no judge has a κ."), None
    best = ranked[0]
    name = analysis.judge_name(best.judge)
    if len(ranked) == 1:
        return join("On ", where, f" only {name} ran (κ {interval(best.kappa)})."), None
    runner = ranked[1]
    runner_name = analysis.judge_name(runner.judge)
    paired = next((c for c in stats.best_vs_others if c.b is runner), None)
    if paired is not None:
        distinct = paired.distinguishable
        evidence = f"paired {difference(paired)}"
    else:
        distinct = not best.kappa.overlaps(runner.kappa)
        evidence = "no shared items; compared by interval overlap"
    head = join("On ", where, f" the best judge is {name} (κ {interval(best.kappa)})")
    runner_text = f"the runner-up {runner_name} (κ {interval(runner.kappa)})"
    if distinct:
        return join(head, f"; it is ahead of {runner_text}: {evidence}."), True
    tied = [
        analysis.judge_name(c.b.judge)
        for c in stats.best_vs_others
        if not c.distinguishable and c.b is not runner
    ]
    tail = f" Also {NOT_DISTINGUISHABLE} from the best: {capped(tied)}." if tied else ""
    return join(head, f", but it is {NOT_DISTINGUISHABLE} from {runner_text}: {evidence}.", tail), (
        False
    )


def _top_group(stats: DatasetStats) -> set[Judge]:
    """The best judge and every judge not distinguishable from it."""
    ranked = stats.ranked
    if not ranked:
        return set()
    group = {ranked[0].judge}
    compared = {c.b.judge: c for c in stats.best_vs_others}
    for cell in ranked[1:]:
        c = compared.get(cell.judge)
        tied = not c.distinguishable if c is not None else cell.kappa.overlaps(ranked[0].kappa)
        if tied:
            group.add(cell.judge)
    return group


def one_winner(analysis: Analysis) -> Answer:
    """Q2: is one judge best on every dataset?"""
    answer = Answer(
        "q2",
        "Is there one judge that wins everywhere?",
        Markup(""),
        sources=[link(TABLE_BY_DATASET, "κ by dataset table")]
        + [
            link(_anchor(analysis, s), f"{s.name} table")
            for s in analysis.datasets
            if len(analysis.datasets) <= 6
        ],
    )
    bests: dict[str, Judge] = {}
    clear: dict[str, bool | None] = {}
    for stats in analysis.datasets:
        sentence, distinct = _best_sentence(analysis, stats)
        answer.points.append(sentence)
        if stats.ranked:
            bests[stats.name] = stats.ranked[0].judge
            clear[stats.name] = distinct
    if not bests:
        answer.lead = join("No judge has a κ in this report.")
        return answer
    winners = set(bests.values())
    unclear = [name for name, distinct in clear.items() if distinct is False]
    if len(analysis.datasets) == 1:
        name, judge = next(iter(bests.items()))
        verdict = (
            f"{analysis.judge_name(judge)} is best on {name}"
            + (f" but {NOT_DISTINGUISHABLE} from the runner-up" if unclear else "")
            + "; with a single dataset, “everywhere” cannot be tested."
        )
        answer.lead = join(verdict)
        return answer
    if len(winners) == 1:
        judge = next(iter(winners))
        lead = f"Yes: {analysis.judge_name(judge)} has the highest κ on every dataset"
        if unclear:
            lead += f", but on {', '.join(unclear)} it is {NOT_DISTINGUISHABLE} from the runner-up"
        answer.lead = join(lead + ".")
    else:
        per = "; ".join(f"{name}: {analysis.judge_name(j)}" for name, j in bests.items())
        lead = f"No: the best judge differs by dataset ({per})"
        if unclear:
            lead += (
                f", though on {', '.join(unclear)} the best is {NOT_DISTINGUISHABLE} from the "
                "runner-up"
            )
        answer.lead = join(lead + ".")
    everywhere = set.intersection(*(_top_group(s) for s in analysis.datasets if s.ranked))
    ran_everywhere = {
        j for j in everywhere if all(any(c.judge == j for c in s.ranked) for s in analysis.datasets)
    }
    if ran_everywhere and (len(winners) > 1 or unclear):
        names = sorted(analysis.judge_name(j) for j in ran_everywhere)
        answer.points.append(
            join(
                "Best or ",
                NOT_DISTINGUISHABLE,
                " from the best on every dataset: ",
                capped(names),
                ".",
            )
        )
    return answer


def _effect_verdict(c: Comparison) -> str:
    if not c.distinguishable:
        return NOT_DISTINGUISHABLE
    return "the image helps" if c.difference > 0 else "the image hurts"


def image_effect(analysis: Analysis) -> Answer:
    """Q3: does seeing the image help each model?"""
    answer = Answer(
        "q3",
        "Does seeing the image help this model?",
        Markup(""),
        sources=[link(TABLE_IMAGE, "Δκ table"), link(FIG_IMAGE, "Δκ figure")],
    )
    grouped: dict[tuple[str, str, str], list[tuple[str, Comparison]]] = {}
    for stats in analysis.datasets:
        for c in stats.modality_effects:
            key = (c.a.judge.model, c.a.judge.prompt_id, c.a.judge.modality)
            grouped.setdefault(key, []).append((stats.name, c))
    failed = [u for u in analysis.not_analysed if _would_pair(analysis, u)]
    if not grouped:
        answer.sources = []
        if failed:
            answer.lead = join(
                "No model completed both a text-only cell and a cell with the image on the "
                "same dataset: the cells that would make this comparison failed or were "
                "stopped, so it cannot be answered from this sweep."
            )
            answer.points.append(left_out(analysis, lambda u: u in failed) or join())
            return answer
        answer.lead = join(
            "No model ran both with and without the image on the same dataset, so this "
            "cannot be answered here; sweep a vision model over modality=text,mm,image."
        )
        return answer
    counts = {"helps": 0, "hurts": 0, NOT_DISTINGUISHABLE: 0}
    points: list[tuple[Any, Markup]] = []
    for (model, prompt, modality), entries in sorted(grouped.items()):
        parts = []
        for name, c in entries:
            verdict = _effect_verdict(c)
            counts[verdict.split()[-1] if c.distinguishable else NOT_DISTINGUISHABLE] += 1
            parts.append(f"on {name} {difference(c)} — {verdict}")
        label = model + (f" ({prompt})" if analysis.with_prompt else "")
        clear = sum(c.distinguishable for _, c in entries)
        points.append(
            (
                -clear,
                join(
                    f"{label}, {MODALITY_NAMES.get(modality, modality)} vs text only: ",
                    "; ".join(parts),
                    ".",
                ),
            )
        )
    _more(answer, points, "the Δκ table")
    note = left_out(analysis, lambda u: u in failed)
    if note is not None:
        answer.points.append(note)
    total = sum(counts.values())
    answer.lead = join(
        f"Of {total} comparison{'s' if total != 1 else ''} of a model with and without the "
        f"image (paired on the same items): the image helps in {counts['helps']}, hurts in "
        f"{counts['hurts']}, and is {NOT_DISTINGUISHABLE} from text only in "
        f"{counts[NOT_DISTINGUISHABLE]}."
    )
    return answer


def _would_pair(analysis: Analysis, cell: Unfinished) -> bool:
    """Whether an unfinished cell was one side of a with/without-image comparison: the same
    model and prompt was also run (or tried) on the same dataset with the other kind of
    input."""
    tried = {
        (stats.name, c.judge.model, c.judge.prompt_id, c.judge.modality)
        for stats in analysis.datasets
        for c in stats.cells
    }
    tried |= {
        (u.dataset, u.judge.model, u.judge.prompt_id, u.judge.modality)
        for u in analysis.not_analysed
    }
    sees_image = cell.judge.modality in IMAGE_MODALITIES
    wanted = ("text",) if sees_image else IMAGE_MODALITIES
    return any(
        (cell.dataset, cell.judge.model, cell.judge.prompt_id, modality) in tried
        for modality in wanted
    )


def _frontier_text(analysis: Analysis, stats: DatasetStats) -> Markup:
    cells = stats.frontier_cells
    steps = {id(c.a): c for c in stats.frontier_steps}
    parts = []
    for index, cell in enumerate(cells):
        text = (
            f"{analysis.judge_name(cell.judge)} ({usd(cell.usd_per_million)}, "
            f"κ {num(cell.kappa.estimate)}"
        )
        step = steps.get(id(cell))
        if index and step is not None:
            cheaper = analysis.judge_name(step.b.judge)
            if step.distinguishable:
                text += f"; {num(step.difference, sign=True)} over {cheaper}, {difference(step)}"
            else:
                text += f"; {NOT_DISTINGUISHABLE} from the cheaper {cheaper}: {difference(step)}"
        parts.append(text + ")")
    return join(link(_anchor(analysis, stats), stats.name), ": ", " → ".join(parts), ".")


def frontier(analysis: Analysis) -> Answer:
    """Q4: the cost–agreement frontier per dataset and on average."""
    answer = Answer(
        "q4",
        "Which judges sit on the cost–accuracy frontier?",
        join(
            "The frontier holds the judges that no other judge matches or beats on κ at the "
            "same or a lower price; cheapest first. A step that is ",
            NOT_DISTINGUISHABLE,
            " from the cheaper judge before it buys nothing measurable.",
        ),
        sources=[link(FIG_COST, "κ against cost figure"), link(TABLE_FRONTIER, "frontier table")],
    )
    for stats in analysis.datasets:
        if stats.frontier_cells:
            answer.points.append(_frontier_text(analysis, stats))
    if len(analysis.datasets) > 1 and analysis.average_frontier:
        parts = [
            f"{analysis.judge_name(a.judge)} ({usd(a.usd_per_million)}, "
            f"mean κ {num(a.kappa.estimate)} over {len(a.datasets)} dataset"
            f"{'s' if len(a.datasets) != 1 else ''})"
            for a in analysis.average_frontier
        ]
        answer.points.append(join("Averaged over datasets: ", " → ".join(parts), "."))
    cheapest = [_cheapest_as_good(analysis, s) for s in analysis.datasets if len(s.ranked) > 1]
    if cheapest:
        answer.points.append(
            join(
                "The cheapest judge ",
                NOT_DISTINGUISHABLE,
                " from the best (paired bootstrap on shared items): ",
                Markup("; ").join(cheapest),
                ".",
            )
        )
    return answer


def cheapest_as_good(stats: DatasetStats) -> Cell | None:
    """The cheapest judge not distinguishable from the best (:func:`analysis.recommended`)."""
    return recommended(stats)


def _cheapest_as_good(analysis: Analysis, stats: DatasetStats) -> Markup:
    best = stats.ranked[0]
    cell = cheapest_as_good(stats)
    where = link(_anchor(analysis, stats), stats.name)
    if cell is None or cell is best:
        return join(where, f" the best itself, {analysis.judge_name(best.judge)}")
    return join(
        where,
        f" {analysis.judge_name(cell.judge)} ({usd(cell.usd_per_million)}, κ "
        f"{num(cell.kappa.estimate)}) against the best {analysis.judge_name(best.judge)} "
        f"({usd(best.usd_per_million)}, κ {num(best.kappa.estimate)})",
    )
