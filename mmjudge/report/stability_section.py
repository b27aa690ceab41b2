"""Test–retest stability in the report: for each cell judged more than once per item
(``runner.samples``), κ between its samples beside the human–human κ of its dataset, the
share of items whose grade moved, and those items.

Every figure is read from the cell's ``summary.json`` (its ``stability`` block, computed by
:func:`mmjudge.studies.stability.stability_summary`); the ceiling is the dataset's, as the
report's other tables show it.
"""

from __future__ import annotations

import math
from typing import Any

from mmjudge.display import MISSING, usd
from mmjudge.metrics.scoring import Interval
from mmjudge.report.analysis import MODALITY_NAMES, Analysis, DatasetStats
from mmjudge.report.findings.prose import interval, num

Row = dict[str, Any]
#: Unstable items shown per cell (the summary lists more; the count covers all).
SHOWN = 20


def _value(value: Any) -> float:
    return math.nan if value is None else float(value)


def _ceiling(stats: DatasetStats) -> str:
    ceiling = stats.ceiling
    if ceiling is None:
        return MISSING
    if ceiling[0] == ceiling[1]:
        return num(ceiling[0])
    return f"{num(ceiling[0])}–{num(ceiling[1])}"


def stability_rows(analysis: Analysis) -> list[Row]:
    """One row per cell with repeated samples: κ between samples with its interval, the
    human–human κ, the share of unstable items and what the repeats cost."""
    rows: list[Row] = []
    for stats in analysis.datasets:
        for cell in stats.cells:
            block = cell.summary.stability
            if block is None:
                continue
            kappa = block.kappa
            share = block.unstable_share
            rows.append(
                {
                    "dataset": stats.name,
                    "judge": analysis.judge_name(cell.judge),
                    "modality": MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
                    "samples": block.samples,
                    "n": block.n_items,
                    "kappa": interval(
                        Interval(_value(kappa.estimate), _value(kappa.low), _value(kappa.high))
                    ),
                    "judge_kappa": interval(cell.kappa),
                    "ceiling": _ceiling(stats),
                    "unstable": block.n_unstable,
                    "share": MISSING if share is None else f"{100 * share:.1f}%",
                    "usd": usd(block.spent_usd),
                    "items": [
                        {
                            "query": item.query_id,
                            "result": item.result_id,
                            "labels": " · ".join(
                                MISSING if g is None else str(g) for g in item.labels
                            ),
                        }
                        for item in block.unstable[:SHOWN]
                    ],
                }
            )
    return rows
