"""Plain-language answers to the report's four questions, written from the numbers.

Each answer is a lead sentence and a list of points, as HTML fragments: every value that
comes from a config or a dataset is escaped (``markupsafe``), and links point at the
figure or table an answer rests on. A difference within noise is called "not
distinguishable": a paired bootstrap interval that contains 0, or, for judges on different
datasets, 95% intervals that overlap.

One module per question: :mod:`.by_dataset` (Q1, the use case), :mod:`.winner` (Q2, one
judge everywhere), :mod:`.image` (Q3, the image's effect), :mod:`.cost` (Q4, the frontier);
:mod:`.answer` holds what every answer does alike and :mod:`.prose` how numbers are written.
"""

from __future__ import annotations

from mmjudge.report.analysis import Analysis
from mmjudge.report.findings.answer import MAX_POINTS, Answer, left_out
from mmjudge.report.findings.by_dataset import use_case
from mmjudge.report.findings.cost import cheapest_as_good, frontier
from mmjudge.report.findings.image import image_effect
from mmjudge.report.findings.prose import (
    FIG_BY_DATASET,
    FIG_COST,
    FIG_IMAGE,
    NOT_DISTINGUISHABLE,
    TABLE_BY_DATASET,
    TABLE_FRONTIER,
    TABLE_IMAGE,
    TABLE_UNFINISHED,
)
from mmjudge.report.findings.winner import one_winner

__all__ = [
    "FIG_BY_DATASET",
    "FIG_COST",
    "FIG_IMAGE",
    "MAX_POINTS",
    "NOT_DISTINGUISHABLE",
    "TABLE_BY_DATASET",
    "TABLE_FRONTIER",
    "TABLE_IMAGE",
    "TABLE_UNFINISHED",
    "Answer",
    "answers",
    "cheapest_as_good",
    "frontier",
    "image_effect",
    "one_winner",
    "use_case",
]


def answers(analysis: Analysis) -> list[Answer]:
    """The four answers in the page's order; Q2 and Q4 also name every cell left out."""
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
