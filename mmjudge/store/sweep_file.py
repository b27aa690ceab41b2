"""``sweep_summary.json``: every cell of a sweep folder with how it ended, and the cells per
status (:class:`SweepSummary`). Built from the cells' own summaries
(:meth:`SweepSummary.of`), written by :func:`write_sweep_summary` and read back by
:func:`read_sweep_summary`; nothing else knows the file's keys.

Layout versions (``schema_version``):

1. The first layout, and the current one. A cell's item count is written ``n`` (the
   record's :attr:`SweepSummaryCell.n_judgments`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.errors import MMJudgeError
from mmjudge.files import write_atomic
from mmjudge.store.blocks import SINGLE
from mmjudge.store.bounds import Bounds, finite_number
from mmjudge.store.status import SKIPPED, count_statuses, sweep_exit_code
from mmjudge.store.summary import RunSummary

#: A sweep folder's own summary: every cell with its status.
SWEEP_SUMMARY = "sweep_summary.json"
#: The layout's version (see the module docstring).
SWEEP_SUMMARY_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SweepSummaryCell:
    """One cell of a sweep as ``sweep_summary.json`` lists it (copied from its own
    ``summary.json``, never recomputed)."""

    run_id: str
    """The cell's run folder's name."""
    status: str
    """How it ended (``complete``, ``partial``, ``failed``, ``skipped``…)."""
    dataset: str
    """Dataset name."""
    model: str
    """The judge's name (for a panel or cascade, a description of it)."""
    modality: str
    """``text``, ``mm`` or ``image``."""
    prompt_id: str
    """The prompt variant."""
    kind: str = SINGLE
    """``single``, ``panel`` or ``cascade``."""
    skip_reason: str | None = None
    """Why a skipped cell could not run."""
    status_reason: str | None = None
    """Why it ended as it did, in a line."""
    first_error: str | None = None
    """The first failed row's message."""
    n_judgments: int = 0
    """Rows it wrote, failed ones included (written ``n``)."""
    n_scored: int | None = None
    """Items its κ and α are on (None when nothing was scored)."""
    n_errors: int = 0
    """Rows with an item-level error."""
    kappa: float | None = None
    """Cohen's κ against the consensus."""
    kappa_interval: Bounds | None = None
    """κ with its 95% interval, when one was computed."""
    alpha: float | None = None
    """Krippendorff's α against the consensus."""
    usd_per_million: float = 0.0
    """Dollars per million judgments."""

    @classmethod
    def of(cls, run_dir: Path, summary: RunSummary) -> SweepSummaryCell:
        """The cell's line, from its ``summary.json``."""
        cell, status, metrics = summary.cell, summary.status, summary.metrics
        interval = metrics.interval("kappa")
        return cls(
            run_id=summary.run_id or Path(run_dir).name,
            status=status.status,
            dataset=cell.dataset,
            model=cell.model,
            modality=cell.modality,
            prompt_id=cell.prompt_id,
            kind=summary.kind,
            skip_reason=status.skip_reason,
            status_reason=status.status_reason,
            first_error=summary.errors.first,
            n_judgments=summary.n_judgments,
            n_scored=metrics.n_scored,
            n_errors=summary.n_errors,
            kappa=finite_number(metrics.kappa),
            kappa_interval=None if interval is None else Bounds.of(interval),
            alpha=finite_number(metrics.alpha),
            usd_per_million=summary.cost.usd_per_million,
        )


@dataclass(frozen=True)
class SweepSummary:
    """A sweep folder's cells and their statuses: the contents of ``sweep_summary.json``."""

    n_cells: int
    """Cells listed, panels and cascades included."""
    n_skipped: int
    """Cells skipped before any call."""
    by_status: dict[str, int]
    """Cells per status; adds up to :attr:`n_cells`."""
    exit_code: int
    """The sweep's exit code: its most severe judged cell's (panels and cascades left out)."""
    cells: tuple[SweepSummaryCell, ...]
    """Every cell, in the order found."""
    schema_version: int = SWEEP_SUMMARY_SCHEMA_VERSION
    """Version of this layout."""

    @classmethod
    def of(cls, cells: Sequence[SweepSummaryCell]) -> SweepSummary:
        """The summary of ``cells``: the counts follow from them."""
        judged = [cell.status for cell in cells if cell.kind == SINGLE]
        return cls(
            n_cells=len(cells),
            n_skipped=sum(cell.status == SKIPPED for cell in cells),
            by_status=count_statuses(cell.status for cell in cells),
            exit_code=sweep_exit_code(judged),
            cells=tuple(cells),
        )


def write_sweep_summary(folder: Path, summary: SweepSummary) -> Path:
    """Write ``sweep_summary.json`` into a sweep folder, atomically."""
    text = json.dumps(_layout(summary), indent=2, allow_nan=False)
    return write_atomic(Path(folder) / SWEEP_SUMMARY, text + "\n")


def read_sweep_summary(folder: Path) -> SweepSummary | None:
    """A sweep folder's ``sweep_summary.json`` (None when it has none), of this layout or an
    earlier one."""
    path = Path(folder) / SWEEP_SUMMARY
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MMJudgeError(f"{path}: cannot be read ({error}); build the report again") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(data, dict) or (version or 1) > SWEEP_SUMMARY_SCHEMA_VERSION:
        raise MMJudgeError(f"{path}: not a sweep summary this version of mmjudge reads")
    cells = tuple(_cell(entry) for entry in data.get("cells") or [] if isinstance(entry, dict))
    return SweepSummary(
        n_cells=int(data.get("n_cells") or len(cells)),
        n_skipped=int(data.get("n_skipped") or 0),
        by_status={str(k): int(v) for k, v in (data.get("by_status") or {}).items()},
        exit_code=int(data.get("exit_code") or 0),
        cells=cells,
    )


def _layout(summary: SweepSummary) -> dict[str, Any]:
    return {
        "schema_version": summary.schema_version,
        "n_cells": summary.n_cells,
        "n_skipped": summary.n_skipped,
        "by_status": summary.by_status,
        "exit_code": summary.exit_code,
        "cells": [
            {
                "run_id": cell.run_id,
                "status": cell.status,
                "skip_reason": cell.skip_reason,
                "dataset": cell.dataset,
                "model": cell.model,
                "modality": cell.modality,
                "prompt_id": cell.prompt_id,
                "kind": cell.kind,
                "n": cell.n_judgments,
                "n_scored": cell.n_scored,
                "n_errors": cell.n_errors,
                "status_reason": cell.status_reason,
                "first_error": cell.first_error,
                "kappa": cell.kappa,
                "kappa_interval": None
                if cell.kappa_interval is None
                else cell.kappa_interval.as_json(),
                "alpha": cell.alpha,
                "usd_per_million": cell.usd_per_million,
            }
            for cell in summary.cells
        ],
    }


def _cell(data: Mapping[str, Any]) -> SweepSummaryCell:
    interval = data.get("kappa_interval")
    n_scored = data.get("n_scored")
    return SweepSummaryCell(
        run_id=str(data.get("run_id") or ""),
        status=str(data.get("status") or ""),
        dataset=str(data.get("dataset") or ""),
        model=str(data.get("model") or ""),
        modality=str(data.get("modality") or ""),
        prompt_id=str(data.get("prompt_id") or ""),
        kind=str(data.get("kind") or SINGLE),
        skip_reason=data.get("skip_reason"),
        status_reason=data.get("status_reason"),
        first_error=data.get("first_error"),
        n_judgments=int(data.get("n") or 0),
        n_scored=None if n_scored is None else int(n_scored),
        n_errors=int(data.get("n_errors") or 0),
        kappa=finite_number(data.get("kappa")),
        kappa_interval=Bounds.of(interval) if isinstance(interval, dict) else None,
        alpha=finite_number(data.get("alpha")),
        usd_per_million=float(data.get("usd_per_million") or 0.0),
    )
