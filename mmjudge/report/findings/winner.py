"""Q2: is one judge best on every dataset?

On each dataset the best judge is compared with the runner-up by the paired bootstrap on
the items both graded, or, without shared items, by whether their intervals overlap."""

from __future__ import annotations

from markupsafe import Markup

from mmjudge.report.analysis import Analysis, DatasetStats, Judge
from mmjudge.report.findings.answer import Answer, dataset_link, stats_anchor
from mmjudge.report.findings.prose import (
    NOT_DISTINGUISHABLE,
    TABLE_BY_DATASET,
    capped,
    difference,
    interval,
    join,
    link,
)
from mmjudge.report.verdicts import at_chance


def one_winner(analysis: Analysis) -> Answer:
    """Q2: is one judge best on every dataset?"""
    answer = Answer(
        "q2",
        "Is there one judge that wins everywhere?",
        sources=[link(TABLE_BY_DATASET, "κ by dataset table")]
        + [
            link(stats_anchor(analysis, s), f"{s.name} table")
            for s in analysis.datasets
            if len(analysis.datasets) <= 6
        ],
    )
    bests, unclear = _best_per_dataset(analysis, answer)
    if not bests:
        answer.lead = join("No judge has a κ in this report.")
    elif len(analysis.datasets) == 1:
        answer.lead = _one_dataset_lead(analysis, bests, unclear)
    else:
        answer.lead = _lead(analysis, bests, unclear)
        answer.points += _tied_everywhere(analysis, set(bests.values()), unclear)
    return answer


def _best_per_dataset(analysis: Analysis, answer: Answer) -> tuple[dict[str, Judge], list[str]]:
    """Add each dataset's best-judge sentence to the answer; return the best judge per
    dataset and the datasets whose best is not distinguishable from the runner-up."""
    bests: dict[str, Judge] = {}
    unclear: list[str] = []
    for stats in analysis.datasets:
        sentence, distinct = _best_sentence(analysis, stats)
        answer.points.append(sentence)
        if stats.ranked:
            bests[stats.name] = stats.ranked[0].judge
            if distinct is False:
                unclear.append(stats.name)
    return bests, unclear


def _at_chance(analysis: Analysis) -> list[str]:
    """The datasets where no judge's κ interval lies above 0 (chance)."""
    return [s.name for s in analysis.datasets if at_chance(s)]


def _one_dataset_lead(analysis: Analysis, bests: dict[str, Judge], unclear: list[str]) -> Markup:
    name, judge = next(iter(bests.items()))
    if _at_chance(analysis):
        return join(
            f"No judge on {name} agrees with people better than chance (every κ interval "
            f"reaches 0); the highest κ is {analysis.judge_name(judge)}'s. With a single "
            "dataset, “everywhere” cannot be tested."
        )
    return join(
        f"{analysis.judge_name(judge)} is best on {name}"
        + (f" but {NOT_DISTINGUISHABLE} from the runner-up" if unclear else "")
        + "; with a single dataset, “everywhere” cannot be tested."
    )


def _lead(analysis: Analysis, bests: dict[str, Judge], unclear: list[str]) -> Markup:
    """Yes (one judge is best on every dataset) or no (which is best where)."""
    winners = set(bests.values())
    if len(winners) == 1:
        judge = next(iter(winners))
        lead = f"Yes: {analysis.judge_name(judge)} has the highest κ on every dataset"
        if unclear:
            lead += f", but on {', '.join(unclear)} it is {NOT_DISTINGUISHABLE} from the runner-up"
        return join(lead + "." + _chance_note(analysis))
    per = "; ".join(f"{name}: {analysis.judge_name(j)}" for name, j in bests.items())
    lead = f"No: the best judge differs by dataset ({per})"
    if unclear:
        lead += (
            f", though on {', '.join(unclear)} the best is {NOT_DISTINGUISHABLE} from the runner-up"
        )
    return join(lead + "." + _chance_note(analysis))


def _chance_note(analysis: Analysis) -> str:
    """A sentence naming the datasets where no judge beats chance (empty when none)."""
    at_chance = _at_chance(analysis)
    if not at_chance:
        return ""
    return (
        f" On {', '.join(at_chance)} no judge agrees with people better than chance (every "
        "κ interval reaches 0): the highest κ there is not a judge to use."
    )


def _tied_everywhere(analysis: Analysis, winners: set[Judge], unclear: list[str]) -> list[Markup]:
    """The judges that ran on every dataset and are best or tied with the best on each, as
    one point, when there is no clear single winner."""
    everywhere = set.intersection(*(_top_group(s) for s in analysis.datasets if s.ranked))
    ran_everywhere = {
        j for j in everywhere if all(any(c.judge == j for c in s.ranked) for s in analysis.datasets)
    }
    if not ran_everywhere or (len(winners) == 1 and not unclear):
        return []
    names = sorted(analysis.judge_name(j) for j in ran_everywhere)
    if _at_chance(analysis):  # not "best" where the top may be no better than chance
        return [
            join(
                "Highest κ or ",
                NOT_DISTINGUISHABLE,
                " from it on every dataset: ",
                capped(names),
                ".",
            )
        ]
    return [
        join(
            "Best or ", NOT_DISTINGUISHABLE, " from the best on every dataset: ", capped(names), "."
        )
    ]


def _best_sentence(analysis: Analysis, stats: DatasetStats) -> tuple[Markup, bool | None]:
    """The dataset's best judge and whether it is distinguishable from the runner-up."""
    ranked = stats.ranked
    where = dataset_link(analysis, stats)
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
    if not best.kappa.above_chance:
        head = join(
            "On ",
            where,
            f" the highest κ is {name}'s (κ {interval(best.kappa)}), which may be no better "
            "than chance (its interval reaches 0)",
        )
    else:
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
