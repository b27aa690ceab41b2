"""One answer on the report's page, and what every answer does the same way: rank and cap
its points, name the cells it had to leave out, link a dataset to its table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from mmjudge.report.analysis import Analysis, DatasetStats, Unfinished
from mmjudge.report.findings.prose import TABLE_UNFINISHED, dataset_anchor, join, link

#: Points listed under an answer at most; the rest are counted and left to the tables.
MAX_POINTS = 12


@dataclass
class Answer:
    """One question's answer: a lead sentence, its points, and links to what it rests on."""

    anchor: str
    question: str
    lead: Markup = field(default_factory=Markup)
    points: list[Markup] = field(default_factory=list)
    sources: list[Markup] = field(default_factory=list)


def add_points(answer: Answer, points: list[tuple[Any, Markup]], where: str) -> None:
    """Add the points, most important (lowest key) first, at most MAX_POINTS of them."""
    points.sort(key=lambda p: p[0])
    answer.points += [text for _, text in points[:MAX_POINTS]]
    if len(points) > MAX_POINTS:
        answer.points.append(join(f"… and {len(points) - MAX_POINTS} more: see {where}."))


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


def stats_anchor(analysis: Analysis, stats: DatasetStats) -> str:
    """The anchor of a dataset's own table."""
    return dataset_anchor(analysis.datasets.index(stats), stats.name)


def dataset_link(analysis: Analysis, stats: DatasetStats) -> Markup:
    """The dataset's name, linked to its own table."""
    return link(stats_anchor(analysis, stats), stats.name)
