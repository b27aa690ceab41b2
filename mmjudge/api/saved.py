"""Saved runs and sweeps read back as typed objects: a run's summary and rows, a sweep's
cells (skipped ones with their reasons), a dry run's forecast.

Everything here reads what a run or a sweep wrote (``summary.json``, ``judgments.jsonl``,
``forecast.json``) through :mod:`mmjudge.store`; nothing is recomputed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmjudge.errors import MMJudgeError
from mmjudge.records import Forecast, JudgmentRecord
from mmjudge.store import ENSEMBLES, SUMMARY, RunSummary, read_summary

if TYPE_CHECKING:
    import pandas as pd

#: What a dry run writes in its run folder.
FORECAST_FILE = "forecast.json"


@dataclass(frozen=True)
class CellForecast:
    """What a dry run of one cell expects its calls to use and cost (``forecast.json``)."""

    dataset: str
    """Dataset name."""
    model: str
    """The judge's config name."""
    model_id: str
    """The provider's model id."""
    modality: str
    """``text``, ``mm`` or ``image``."""
    prompt_id: str
    """The prompt variant."""
    pricing_sheet: str | None
    """The price sheet's date."""
    sync: Forecast
    """Calls, tokens and dollars at list prices."""
    batch: Forecast
    """The same calls through a batch API."""
    batch_discount: float
    """The fraction of the list price a batch call costs."""
    data: Mapping[str, Any] = field(repr=False, compare=False)
    """The forecast as ``forecast.json`` holds it."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CellForecast:
        """A forecast from what a dry run returns or writes."""
        return cls(
            dataset=data["dataset"],
            model=data["model"],
            model_id=data["model_id"],
            modality=data["modality"],
            prompt_id=data["prompt_id"],
            pricing_sheet=data.get("pricing_sheet"),
            sync=_forecast(data["forecast"]),
            batch=_forecast(data.get("forecast_batch") or data["forecast"]),
            batch_discount=float(data.get("batch_discount", 1.0)),
            data=dict(data),
        )

    @property
    def usd(self) -> float:
        """Expected dollars at list prices."""
        return self.sync.usd

    def line(self) -> str:
        """The line the command prints for this dry run."""
        from mmjudge.report.cell_lines import forecast_line

        return forecast_line(dict(self.data))


def _forecast(data: Mapping[str, Any]) -> Forecast:
    names = {f.name for f in dataclasses.fields(Forecast)}
    return Forecast(**{key: value for key, value in data.items() if key in names})


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
        return "dry_run" if self.summary is None else self.summary.status.status

    @property
    def skip_reason(self) -> str | None:
        """Why a skipped cell could not run (None for any other)."""
        return None if self.summary is None else self.summary.status.skip_reason

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
    for forecast_file in sorted(folder.rglob(FORECAST_FILE)):
        if not (forecast_file.parent / SUMMARY).is_file():
            data = json.loads(forecast_file.read_text(encoding="utf-8"))
            cells.append(SweepCell(forecast_file.parent, forecast=CellForecast.from_dict(data)))
    if not cells and not ensembles:
        raise MMJudgeError(f"{folder}: no runs below it (no summary.json or forecast.json)")
    cells.sort(key=lambda cell: str(cell.path))
    return Sweep(folder, cells, ensembles)
