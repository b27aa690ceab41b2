"""A finished run's rows turned into its ``summary.json``: agreement with the annotators,
dollars, counts and how the cell ended, for real runs and virtual ones alike."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmjudge.costs.calls import CallPricer
from mmjudge.costs.run_dollars import cost_figures, prompt_cache_use
from mmjudge.store import (
    CallCounts,
    CellInfo,
    CellStatus,
    CostFigures,
    RowFigures,
    RunSummary,
    Stability,
    SummaryParts,
    build_summary,
    judgments_path,
    load_judgments,
    read_summary,
    row_figures,
    write_summary,
)
from mmjudge.store.rows import SAMPLES, SUMMARY_COLUMNS, iter_rows
from mmjudge.store.status import FIRST_UNGRADABLE, UNGRADABLE, Ungradable, cell_end
from mmjudge.studies.positions import call_positions
from mmjudge.studies.run_agreement import agreement, item_keys
from mmjudge.studies.stability import stability_summary

if TYPE_CHECKING:
    import pandas as pd


def first_unparseable(run_dir: Path) -> str | None:
    """The text of the run's first answer that holds no grade (None when there is none).

    The summary's frame leaves answer texts out, so the rows are read again here, only as
    far as that answer."""
    for row in iter_rows(judgments_path(run_dir)):
        if row.get("error") is None and row.get("label") is None:
            return str(row.get("raw_output") or "")
    return None


@dataclass(frozen=True)
class RunEnd:
    """What a run's status follows from (:func:`summarise_run`)."""

    status: CellStatus | None = None
    """The status itself, when it is known (virtual runs are complete)."""
    skipped: str | None = None
    """Why the cell could not run."""
    stop: BaseException | None = None
    """The error that ended the run early."""
    max_error_rate: float = 1.0
    """The share of failed rows past which the run failed."""
    max_unparseable_rate: float = 1.0
    """The share of answers without a grade past which the run failed."""


def summarise_run(
    run_dir: Path,
    cell: CellInfo,
    *,
    relevant_from: float,
    config: dict[str, Any],
    end: RunEnd | None = None,
    parts: SummaryParts | None = None,
    pricer: CallPricer | None = None,
) -> RunSummary:
    """Score a run folder's rows and write its ``summary.json``; returns the summary.

    The cell's status is ``end.status`` when given, otherwise it follows from ``end.skipped``,
    ``end.stop`` or the share of failed rows against ``end.max_error_rate`` and of
    unparseable answers against ``end.max_unparseable_rate`` (the first such answer quoted in
    the reason). ``parts`` are the blocks the rows do not give; the ``stability`` block is
    computed here from the repeats, and the ``prompt_cache`` block from the rows' usage
    under ``pricer`` (the cell's prices) where one is given. A virtual run
    (``parts.ensemble``) spent nothing: its members' calls were paid for.
    """
    end, parts = end or RunEnd(), parts or SummaryParts()
    frame = load_judgments(judgments_path(run_dir), keep=SUMMARY_COLUMNS)
    trained_on = parts.trained_on
    if trained_on is not None:  # the cell's items the judge learnt from, out of its figures
        trained_on = trained_on.among(item_keys(frame))
    figures = row_figures(frame)
    cost = possibly_billed_of(cost_figures(frame), parts.calls)
    stability, cost = sample_stability(run_dir, frame, list(cell.grades), cost)
    if parts.ensemble is not None:
        cost = dataclasses.replace(cost, spent_usd=0.0)
        if stability is not None:  # its members paid for the repeats too
            stability = dataclasses.replace(stability, spent_usd=0.0)
    status = end.status or _ending(run_dir, frame, figures, end)
    summary = build_summary(
        run_dir,
        cell,
        figures,
        metrics=agreement(
            frame,
            list(cell.grades),
            relevant_from,
            leave_out=frozenset(trained_on.items) if trained_on is not None else frozenset(),
        ),
        cost=cost,
        config=config,
        status=status,
        parts=dataclasses.replace(
            parts,
            stability=stability,
            trained_on=trained_on,
            prompt_cache=None if pricer is None else prompt_cache_use(frame, pricer),
            positions=call_positions(frame, list(cell.grades), relevant_from),
        ),
    )
    write_summary(run_dir, summary)
    # What the file holds (plain JSON numbers and keys), as any later reader will see it.
    return read_summary(run_dir)


def possibly_billed_of(cost: CostFigures, calls: CallCounts | None) -> CostFigures:
    """``cost`` with the runner's count of the sends that may have been billed without an
    answer (``calls``), over the cell's runs in its folder, items without a row included
    (stopped by the breaker, a budget or a signal; failed rows a resume dropped), which the
    rows' own columns miss; the rows' sum where no runner counted (a virtual run)."""
    if calls is None:
        return cost
    return dataclasses.replace(
        cost,
        possibly_billed_requests=calls.possibly_billed,
        possibly_billed_usd=calls.possibly_billed_usd,
    )


def _ending(run_dir: Path, frame: pd.DataFrame, figures: RowFigures, end: RunEnd) -> CellStatus:
    """How a real run ended (see :func:`mmjudge.store.status.cell_end`)."""
    return cell_end(
        figures.n_judgments,
        figures.n_errors,
        end.max_error_rate,
        skipped=end.skipped,
        stop=end.stop,
        n_unparseable=figures.n_unparseable,
        max_unparseable_rate=end.max_unparseable_rate,
        first_unparseable=first_unparseable(run_dir) if figures.n_unparseable else None,
        ungradable=ungradable_rows(frame) if figures.errors.by_kind.get(UNGRADABLE) else None,
    )


def ungradable_rows(frame: pd.DataFrame) -> Ungradable:
    """The run's failed rows whose items the judge can never grade (their error is an
    :class:`~mmjudge.errors.UngradableItem`, counted as ``errors.by_kind`` counts it): how
    many, and the first few items by query and result id (rows are written as calls finish,
    so their order differs from run to run; the message should not)."""
    errors = frame["error"].astype("string")
    rows = frame[errors.str.startswith(f"{UNGRADABLE}:").fillna(False).astype(bool)]
    first = rows.sort_values(["query_id", "result_id"]).head(FIRST_UNGRADABLE)
    items = tuple(
        (str(query), str(result))
        for query, result in zip(first["query_id"], first["result_id"], strict=True)
    )
    return Ungradable(len(rows), items)


def sample_stability(
    run_dir: Path, frame: pd.DataFrame, grades: list[int], cost: CostFigures
) -> tuple[Stability | None, CostFigures]:
    """The run's ``stability`` block (None, and ``cost`` as it is, for a run without
    repeats; :func:`mmjudge.studies.stability.stability_summary`)
    from its rows (sample 0) and ``samples.jsonl`` (the repeats), with what the repeats
    cost (``total_usd``, ``spent_usd``) in it; and the run's ``cost`` with the repeats'
    spend added (they are paid for like any call)."""
    if not (run_dir / SAMPLES).is_file():
        return None, cost
    answered = frame[frame["error"].isna()] if len(frame) else frame
    answered = answered.drop_duplicates(["query_id", "result_id"], keep="last")
    items = list(
        zip(answered["query_id"].astype(str), answered["result_id"].astype(str), strict=True)
    )
    repeats: dict[int, dict[tuple[str, str], float]] = {}
    for row in iter_rows(run_dir / SAMPLES):
        label = row.get("label")
        grade = float(label) if label is not None and row.get("error") is None else math.nan
        by_item = repeats.setdefault(int(row.get("sample") or 0), {})
        by_item[(str(row.get("query_id")), str(row.get("result_id")))] = grade
    count = max(repeats, default=0) + 1
    samples = [answered["label"].to_numpy(dtype=float, na_value=np.nan)]
    for sample in range(1, count):
        found = repeats.get(sample, {})
        samples.append(np.array([found.get(item, math.nan) for item in items], dtype=float))
    block = stability_summary(
        samples,
        [q for q, _ in items],
        [r for _, r in items],
        grades=grades,
    )
    repeat = cost_figures(load_judgments(run_dir / SAMPLES, keep=SUMMARY_COLUMNS))
    block = dataclasses.replace(block, total_usd=repeat.total_usd, spent_usd=repeat.spent_usd)
    return block, dataclasses.replace(cost, spent_usd=cost.spent_usd + repeat.spent_usd)
