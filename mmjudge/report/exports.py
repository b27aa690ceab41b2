"""CSV and JSON files written beside the page, so the tables can be taken into a spreadsheet
or a notebook: every judge on every dataset, and every panel and cascade (CSV); the
robustness section and the slices section, languages included (JSON, with their intervals).
The numbers are the ones the page shows, unrounded."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import Comparison
from mmjudge.metrics.scoring import JudgeScore, PairedComparison
from mmjudge.report.analysis import Analysis, Cell, DatasetStats
from mmjudge.report.csv_table import CsvCell, CsvRow, write_csv
from mmjudge.report.verdicts import recommended
from mmjudge.store import Ensemble

JUDGES_CSV = "judges.csv"
ENSEMBLES_CSV = "ensembles.csv"
ROBUSTNESS_JSON = "robustness.json"
SLICES_JSON = "slices.json"


def score_columns(score: JudgeScore | None) -> dict[str, CsvCell]:
    """A score as CSV columns: every measure of the catalogue by name, with ``<name>_low`` and
    ``<name>_high`` for those with intervals, then the items they are on (empty cells for a
    cell that has no score)."""
    out: dict[str, CsvCell] = {}
    for m in catalogue.measures(Comparison.CONSENSUS):
        value = score[m.name] if score is not None else None
        out[m.name] = value.estimate if value is not None else ""
        if m.interval:
            out[f"{m.name}_low"] = value.low if value is not None else ""
            out[f"{m.name}_high"] = value.high if value is not None else ""
    out["n_scored"] = score.n_items if score is not None else ""
    return out


def _cost(cell: Cell) -> dict[str, CsvCell]:
    image, text = cell.cost_split
    return {
        "usd_per_million": cell.usd_per_million,
        "image_usd_per_million": image,
        "text_usd_per_million": text,
    }


def judge_rows(analysis: Analysis, stats: DatasetStats) -> list[CsvRow]:
    best = stats.ranked[0] if stats.ranked else None
    chosen = recommended(stats)
    return [
        {
            "sweep": cell.sweep,
            "dataset": stats.name,
            "model": cell.judge.model,
            "family": analysis.palette.family.get(cell.judge.model, ""),
            "modality": cell.judge.modality,
            "prompt": cell.judge.prompt_id,
            **score_columns(cell.score),
            **_cost(cell),
            "frontier": cell.frontier,
            "above_chance": cell.kappa.above_chance,
            "best": cell is best and cell.kappa.above_chance,
            "recommended": cell is chosen,
            "run_id": cell.run_id,
        }
        for cell in stats.cells
    ]


def ensemble_rows(stats: DatasetStats) -> list[CsvRow]:
    rows: list[CsvRow] = []
    for cell in stats.ensembles:
        ensemble = cell.summary.ensemble
        rows.append(
            {
                "sweep": cell.sweep,
                "dataset": stats.name,
                "kind": cell.kind,
                "name": cell.judge.model,
                "modality": cell.judge.modality,
                "members": "; ".join(f"{m.model}/{m.prompt_id}" for m in ensemble.members)
                if ensemble
                else "",
                "escalation_rate": _escalation(ensemble),
                **score_columns(cell.score),
                **_cost(cell),
                "frontier_with_judges": cell.frontier,
                "run_id": cell.run_id,
            }
        )
    return rows


def write_csvs(analysis: Analysis, out: Path) -> dict[str, str | None]:
    """Write the CSV files; returns their names (None for a file with no rows)."""
    judges = [r for stats in analysis.datasets for r in judge_rows(analysis, stats)]
    ensembles = [r for stats in analysis.datasets for r in ensemble_rows(stats)]
    written = {
        "judges": write_csv(out / JUDGES_CSV, judges),
        "ensembles": write_csv(out / ENSEMBLES_CSV, ensembles),
    }
    return {key: path.name if path else None for key, path in written.items()}


def _escalation(ensemble: Ensemble | None) -> float | str:
    """A cascade's escalation rate ("" for a panel)."""
    rate = ensemble.escalation_rate if ensemble is not None else None
    return "" if rate is None else rate


def _plain(value: Any) -> Any:
    """``value`` with every float that is not finite as null (JSON has no NaN), and every
    record (a dataclass, or a paired comparison) as an object of its fields."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, PairedComparison):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def write_json(path: Path, rows: Sequence[object]) -> None:
    """Write ``rows``, a section's figure records, as a JSON list of objects of their fields
    (an empty list where the section has none)."""
    path.write_text(json.dumps(_plain(rows), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
