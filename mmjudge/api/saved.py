"""Saved runs and sweeps read back as typed objects: a run's summary and rows, a sweep's
cells (skipped ones with their reasons), a dry run's forecast.

Everything here reads what a run or a sweep wrote (``summary.json``, ``judgments.jsonl``,
``forecast.json``) through :mod:`mmjudge.store`; nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mmjudge.errors import MMJudgeError
from mmjudge.records import JudgmentRecord
from mmjudge.store import ENSEMBLES, SUMMARY, RunSummary, read_summary
from mmjudge.store.forecast_file import FORECAST, CellForecast, read_forecast
from mmjudge.store.status import DRY_RUN, SKIPPED

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Run:
    """A run folder read back: its summary, and its judgment rows on demand."""

    path: Path
    """The run folder."""
    summary: RunSummary
    """Its ``summary.json``."""

    @property
    def status(self) -> str:
        """How the run ended: ``complete``, ``partial``, ``skipped``… (see
        :mod:`mmjudge.store.status`)."""
        return self.summary.status.status

    def judgments(self) -> list[JudgmentRecord]:
        """Its rows, one per judged item, in file order (an item judged twice keeps its last
        row)."""
        from mmjudge.store import read_records

        return list(read_records(self.path).values())

    def iter_judgments(self) -> Iterator[JudgmentRecord]:
        """Its rows, one at a time, as written (memory stays flat for a large run)."""
        from mmjudge.store import iter_rows, judgments_path

        path = judgments_path(self.path)
        if not path.is_file():
            return
        for row in iter_rows(path):
            yield JudgmentRecord.from_dict(row)

    def table(self) -> pd.DataFrame:
        """Its rows as a pandas table (human grades as ``human:<annotator>`` columns)."""
        from mmjudge.store import judgments_path, load_judgments

        return load_judgments(judgments_path(self.path))


def open_run(path: str | Path) -> Run:
    """The run saved in ``path`` (a folder holding ``summary.json``).

    Raises:
        MMJudgeError: ``path`` is not a run folder.
    """
    folder = Path(path)
    if not (folder / SUMMARY).is_file():
        raise MMJudgeError(f"{folder}: not a run folder (no summary.json)")
    return Run(folder, read_summary(folder))


@dataclass(frozen=True)
class SweepCell:
    """One cell of a sweep: its folder and either its summary or, for a dry run, its
    forecast."""

    path: Path
    """The cell's run folder."""
    summary: RunSummary | None = None
    """What the cell did (None for a dry run)."""
    forecast: CellForecast | None = None
    """A dry run's forecast (None otherwise)."""
    overrides: tuple[str, ...] = ()
    """The overrides that made the cell (known when the sweep was run from Python)."""

    @property
    def status(self) -> str:
        """``complete``, ``partial``, ``failed``, ``skipped``… or ``dry_run``."""
        if self.summary is not None:
            return self.summary.status.status
        return SKIPPED if self.skip_reason is not None else DRY_RUN

    @property
    def skip_reason(self) -> str | None:
        """Why a skipped cell could not run (None for any other)."""
        if self.summary is not None:
            return self.summary.status.skip_reason
        return None if self.forecast is None else self.forecast.skip_reason

    def open(self) -> Run:
        """The cell as a :class:`Run`, to read its rows.

        Raises:
            MMJudgeError: the cell was a dry run, which judged nothing.
        """
        if self.summary is None:
            raise MMJudgeError(f"{self.path}: a dry run; it has a forecast and no judgments")
        return Run(self.path, self.summary)


@dataclass(frozen=True)
class Sweep:
    """A sweep folder: its cells, the ensembles built from them, and its report."""

    path: Path
    """The sweep folder."""
    cells: list[SweepCell]
    """One per cell, skipped ones included."""
    ensembles: list[Run] = field(default_factory=list)
    """Panels and cascades built from the cells' records (virtual runs)."""
    report: Path | None = None
    """The report folder (its ``index.html``), when one was built."""

    @property
    def by_status(self) -> dict[str, int]:
        """Cells per status."""
        counts: dict[str, int] = {}
        for cell in self.cells:
            counts[cell.status] = counts.get(cell.status, 0) + 1
        return counts


def open_sweep(path: str | Path) -> Sweep:
    """The sweep saved in ``path``: every run folder below it (dry runs by their
    ``forecast.json``), the ensembles under ``ensembles/`` apart.

    Raises:
        MMJudgeError: ``path`` holds no run.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise MMJudgeError(f"{folder}: not a folder")
    cells: list[SweepCell] = []
    ensembles: list[Run] = []
    for run_dir in sorted({p.parent for p in folder.rglob(SUMMARY)}):
        run = Run(run_dir, read_summary(run_dir))
        if ENSEMBLES in run_dir.relative_to(folder).parts:
            ensembles.append(run)
        else:
            cells.append(SweepCell(run_dir, summary=run.summary))
    for forecast_file in sorted(folder.rglob(FORECAST)):
        dry_dir = forecast_file.parent
        if not (dry_dir / SUMMARY).is_file():
            cells.append(SweepCell(dry_dir, forecast=read_forecast(dry_dir)))
    if not cells and not ensembles:
        raise MMJudgeError(f"{folder}: no runs below it (no summary.json or forecast.json)")
    cells.sort(key=lambda cell: str(cell.path))
    return Sweep(folder, cells, ensembles)
