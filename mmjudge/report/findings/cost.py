"""Q4: which judges sit on the cost–agreement frontier, and which is the cheapest judge not
distinguishable from the best?"""

from __future__ import annotations

from markupsafe import Markup

from mmjudge.report.analysis import Analysis, Cell, DatasetStats
from mmjudge.report.findings.answer import Answer, dataset_link
from mmjudge.report.findings.prose import (
    FIG_COST,
    NOT_DISTINGUISHABLE,
    TABLE_FRONTIER,
    difference,
    interval,
    join,
    link,
    listed,
    num,
    usd,
)
from mmjudge.report.verdicts import at_chance, recommended


def _frontier_text(analysis: Analysis, stats: DatasetStats) -> Markup:
    cells = stats.frontier_cells
    steps = {id(c.a): c for c in stats.frontier_steps}
    parts = []
    for index, cell in enumerate(cells):
        text = (
            f"{analysis.judge_name(cell.judge)} ({usd(cell.usd_per_million)}, "
            f"κ {num(cell.kappa.estimate)}"
        )
        if not cell.kappa.above_chance:
            text += ", not above chance"
        step = steps.get(id(cell))
        if index and step is not None:
            cheaper = analysis.judge_name(step.b.judge)
            if step.distinguishable:
                text += f"; {num(step.difference, sign=True)} over {cheaper}, {difference(step)}"
            else:
                text += f"; {NOT_DISTINGUISHABLE} from the cheaper {cheaper}: {difference(step)}"
        parts.append(text + ")")
    return join(dataset_link(analysis, stats), ": ", " → ".join(parts), ".")


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
    chance_only = [s for s in analysis.datasets if at_chance(s)]
    if chance_only:
        answer.lead = join(
            answer.lead,
            " On ",
            listed(dataset_link(analysis, s) for s in chance_only),
            " no judge agrees with people better than chance (every κ interval reaches 0), "
            "so its frontier recommends nothing.",
        )
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
                " from the best (paired bootstrap on shared items"
                + ("; on the asked grades, weighted 1/π" if analysis.asked_lines else "")
                + "): ",
                Markup("; ").join(cheapest),
                ".",
            )
        )
    return answer


def cheapest_as_good(stats: DatasetStats) -> Cell | None:
    """The cheapest judge not distinguishable from the best whose κ interval lies above 0
    (:func:`mmjudge.report.verdicts.recommended`); None when there is none."""
    return recommended(stats)


def _cheapest_as_good(analysis: Analysis, stats: DatasetStats) -> Markup:
    best = stats.ranked[0]
    cell = cheapest_as_good(stats)
    where = dataset_link(analysis, stats)
    if cell is None:
        return join(
            where,
            f" none: no judge that matches the highest κ ({analysis.judge_name(best.judge)}, "
            f"κ {interval(best.kappa)}) agrees with people better than chance (κ 0)",
        )
    if cell is best:
        return join(where, f" the best itself, {analysis.judge_name(best.judge)}")
    return join(
        where,
        f" {analysis.judge_name(cell.judge)} ({usd(cell.usd_per_million)}, κ "
        f"{num(cell.kappa.estimate)}) against the best {analysis.judge_name(best.judge)} "
        f"({usd(best.usd_per_million)}, κ {num(best.kappa.estimate)})",
    )
