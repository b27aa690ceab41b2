"""Position in the call in the report: for each cell that showed several results per call
(``prompt.passages_per_call``), κ of the results shown at each place (``R1``, ``R2``...),
beside the cell's κ, with the calls made and the results asked again on their own.

Every figure is read from the cell's ``summary.json`` (its ``positions`` block, computed by
:func:`mmjudge.studies.positions.call_positions`)."""

from __future__ import annotations

from typing import Any

from mmjudge.display import MISSING
from mmjudge.metrics.scoring import Interval
from mmjudge.report.analysis import MODALITY_NAMES, Analysis
from mmjudge.report.findings.prose import interval
from mmjudge.store import Bounds

Row = dict[str, Any]


def _interval(bounds: Bounds) -> str:
    if bounds.estimate is None:
        return MISSING
    nan = float("nan")
    low = nan if bounds.low is None else bounds.low
    high = nan if bounds.high is None else bounds.high
    return interval(Interval(bounds.estimate, low, high))


def positions_table(analysis: Analysis) -> Row | None:
    """The table: ``places`` (the column headings' places, 1 first) and one row per cell
    with several results per call, each with its κ at every place (``—`` where it showed
    none); None when no cell did."""
    rows: list[Row] = []
    places = 0
    for stats in analysis.datasets:
        for cell in stats.cells:
            block = cell.summary.positions
            if block is None:
                continue
            by_place = {p.position: p for p in block.by_position}
            places = max(places, *by_place) if by_place else places
            rows.append(
                {
                    "dataset": stats.name,
                    "judge": analysis.judge_name(cell.judge),
                    "modality": MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
                    "calls": block.calls,
                    "per_call": f"{block.results_per_call:.1f}",
                    "reasked": block.reasked,
                    "kappa": interval(cell.kappa),
                    "by_place": by_place,
                }
            )
    if not rows:
        return None
    for row in rows:
        by_place = row.pop("by_place")
        row["places"] = [
            {
                "kappa": _interval(by_place[n].kappa) if n in by_place else MISSING,
                "n": by_place[n].n if n in by_place else 0,
            }
            for n in range(1, places + 1)
        ]
    return {"places": list(range(1, places + 1)), "rows": rows}
