"""A finished run's rows turned into its ``summary.json``: agreement with the annotators,
dollars, counts and how the cell ended, for real runs and virtual ones alike."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from mmjudge.agreement.summarise import agreement
from mmjudge.costs.figures import cost_figures
from mmjudge.records import Forecast
from mmjudge.runs import (
    CallCounts,
    CellInfo,
    CellStatus,
    Ensemble,
    RunSummary,
    build_summary,
    judgments_path,
    load_judgments,
    read_summary,
    row_figures,
    write_summary,
)
from mmjudge.runs.rows import SUMMARY_COLUMNS, iter_rows
from mmjudge.runs.status import cell_end


def first_unparseable(run_dir: Path) -> str | None:
    """The text of the run's first answer that holds no grade (None when there is none).

    The summary's frame leaves answer texts out, so the rows are read again here, only as
    far as that answer."""
    for row in iter_rows(judgments_path(run_dir)):
        if row.get("error") is None and row.get("label") is None:
            return str(row.get("raw_output") or "")
    return None


def summarise_run(
    run_dir: Path,
    cell: CellInfo,
    *,
    relevant_from: float,
    config: dict[str, Any],
    status: CellStatus | None = None,
    max_error_rate: float = 1.0,
    max_unparseable_rate: float = 1.0,
    skipped: str | None = None,
    stop: BaseException | None = None,
    calls: CallCounts | None = None,
    ensemble: Ensemble | None = None,
    grading: dict[str, Any] | None = None,
    testbank: dict[str, Any] | None = None,
    forecast: Forecast | None = None,
    n_items: int | None = None,
) -> RunSummary:
    """Score a run folder's rows and write its ``summary.json``; returns the summary.

    The cell's status is ``status`` when given (virtual runs are complete), otherwise it
    follows from ``skipped``, ``stop`` (the error that ended the run early) or the share of
    failed rows against ``max_error_rate`` and of unparseable answers against
    ``max_unparseable_rate`` (the first such answer quoted in the reason). A virtual run
    (``ensemble``) spent nothing: its members' calls were paid for.
    """
    frame = load_judgments(judgments_path(run_dir), keep=SUMMARY_COLUMNS)
    figures = row_figures(frame)
    cost = cost_figures(frame)
    if ensemble is not None:
        cost = dataclasses.replace(cost, spent_usd=0.0)
    if status is None:
        status = cell_end(
            figures.n_judgments,
            figures.n_errors,
            max_error_rate,
            skipped=skipped,
            stop=stop,
            n_unparseable=figures.n_unparseable,
            max_unparseable_rate=max_unparseable_rate,
            first_unparseable=first_unparseable(run_dir) if figures.n_unparseable else None,
        )
    summary = build_summary(
        run_dir,
        cell,
        figures,
        metrics=agreement(frame, list(cell.grades), relevant_from),
        cost=cost,
        config=config,
        status=status,
        calls=calls,
        ensemble=ensemble,
        grading=grading,
        testbank=testbank,
        forecast=forecast,
        n_items=n_items,
    )
    write_summary(run_dir, summary)
    # What the file holds (plain JSON numbers and keys), as any later reader will see it.
    return read_summary(run_dir)
