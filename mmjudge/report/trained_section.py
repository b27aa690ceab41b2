"""Trained judges in the report: for each cell of a judge trained by ``mmjudge distill``,
where it comes from (source, teacher, base checkpoint, seed, items trained on, its held-out κ
as training measured it) and what its κ in this report is measured on.

Every figure is read from the cell's ``summary.json`` (its ``trained_on`` block). The cell's κ
is the one every other table shows, which leaves out the items the judge learnt from
(:func:`mmjudge.studies.run_agreement.agreement`, and the report's labels likewise), so a κ on
training items is never shown as a held-out one.
"""

from __future__ import annotations

from typing import Any

from mmjudge.display import MISSING
from mmjudge.report.analysis import MODALITY_NAMES, Analysis
from mmjudge.report.findings.prose import interval

Row = dict[str, Any]


def trained_rows(analysis: Analysis) -> list[Row]:
    """One row per cell of a trained judge: its κ with what it is measured on, and its
    provenance."""
    rows: list[Row] = []
    for stats in analysis.datasets:
        for cell in stats.cells:
            block = cell.summary.trained_on
            if block is None:
                continue
            n_scored = cell.score.n_items if cell.score is not None else 0
            rows.append(
                {
                    "dataset": stats.name,
                    "judge": analysis.judge_name(cell.judge),
                    "modality": MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
                    "kappa": interval(cell.kappa),
                    "scope": block.scope(n_scored),
                    "source": block.source,
                    "teacher": block.teacher,
                    "base": block.base,
                    "seed": block.seed,
                    "trained": block.n_trained,
                    "vs_teacher": block.held_out_vs_teacher,
                    "vs_people": block.held_out_vs_people or MISSING,
                    "manifest": block.manifest,
                }
            )
    return rows
