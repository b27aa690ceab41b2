"""Read a run or sweep directory back for the report: one row per cell from the summaries,
and each cell's labels streamed from ``judgments.jsonl`` into compact arrays.

Only what the statistics need is kept per row (item, judge label, byte offset of the row);
human grades are kept once per item, shared by every judge of a dataset. Texts such as
explanations are read later, only for the few rows the report shows.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mmjudge import metrics
from mmjudge.metrics import catalogue
from mmjudge.store import RunSummary, read_summaries
from mmjudge.store.race_file import read_race_file
from mmjudge.store.rows import human_grades, label_rows
from mmjudge.store.status import ANALYSED
from mmjudge.store.sweep_file import SweepSummary, SweepSummaryCell
from mmjudge.store.sweep_file import write_sweep_summary as write_sweep_file
from mmjudge.studies.race_records import fates_by_folder

_NAN = math.nan


def sweep_labels(roots: Sequence[Path]) -> list[str]:
    """A short name per sweep folder: its own name, with its parent's where two share one."""
    names = [root.name for root in roots]
    return [
        f"{root.parent.name}/{root.name}" if names.count(root.name) > 1 else root.name
        for root in roots
    ]


def cell_table(roots: Path | Sequence[Path]) -> pd.DataFrame:
    """One row per run (sweep cell), from each run's ``summary.json``, for one or several
    run or sweep folders; ``sweep`` names the folder a run was found in, ``race`` what the
    folder's race did with the cell (None when the folder is not a race)."""
    folders = [Path(roots)] if isinstance(roots, str | Path) else [Path(r) for r in roots]
    rows = []
    seen: set[Path] = set()
    for root, label in zip(folders, sweep_labels(folders), strict=True):
        race = read_race_file(root)
        fates = fates_by_folder(race) if race is not None else {}
        for run_dir, summary in read_summaries(root):
            if run_dir.resolve() in seen:
                continue
            seen.add(run_dir.resolve())
            rows.append({**_cell_row(run_dir, summary, label), "race": fates.get(run_dir.name)})
    return pd.DataFrame(rows)


def _cell_row(run_dir: Path, summary: RunSummary, sweep: str) -> dict[str, Any]:
    cell, status = summary.cell, summary.status
    return {
        "sweep": sweep,
        "run_dir": str(run_dir),
        "run_id": summary.run_id or run_dir.name,
        "status": status.status,
        "skip_reason": status.skip_reason,
        "dataset": cell.dataset,
        "model": cell.model,
        "model_id": cell.model_id,
        "modality": cell.modality,
        "prompt_id": cell.prompt_id,
        "perturb": cell.perturb,
        "kind": summary.kind,
        "pricing_sheet": cell.pricing_sheet,
        "finished_at": summary.finished_at,
        "n": summary.n_judgments,
        "n_errors": summary.n_errors,
        "n_unparseable": summary.n_unparseable,
        "status_reason": status.status_reason,
        "first_error": summary.errors.first,
        "errors_by_kind": summary.errors.by_kind,
        **measure_entries(summary),
        "n_scored": summary.metrics.n_scored,
        "usd_per_million": summary.cost.usd_per_million,
        "total_usd": summary.cost.total_usd,
        "summary": summary,
    }


def measure_entries(summary: RunSummary) -> dict[str, float | dict[str, float | None] | None]:
    """A cell's measures as its ``summary.json`` has them: each measure of the catalogue by
    name, and ``<name>_interval`` for those with intervals (None where the run has none)."""
    out: dict[str, float | dict[str, float | None] | None] = {}
    for m in catalogue.measures(catalogue.Comparison.CONSENSUS):
        out[m.name] = summary.metrics.value(m.name)
        if m.interval:
            out[f"{m.name}_interval"] = summary.metrics.interval(m.name)
    return out


def judged_statuses(cells: pd.DataFrame) -> list[str]:
    """The status of every judged cell (panels and cascades built from them left out)."""
    if cells.empty:
        return []
    return [str(s) for s in cells.loc[cells["kind"] == "single", "status"]]


def cell_scale(summary: RunSummary) -> tuple[list[float], dict[str, str], float | None]:
    """The grades, their meanings and the lowest relevant grade a cell's summary declares
    (the grades ``[0, 1, 2]`` where it declares none)."""
    scale = summary.scale_settings()
    grades = summary.cell.grades or scale.get("grades") or [0, 1, 2]
    meanings = {str(k): str(v) for k, v in (scale.get("meanings") or {}).items()}
    relevant_from = scale.get("relevant_from")
    threshold = None if relevant_from is None else float(relevant_from)
    return [float(g) for g in grades], meanings, threshold


def completed_cells(cells: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Completed cells (complete, or partial: some rows failed, see
    :data:`mmjudge.store.status.ANALYSED`), one per (dataset, model, modality, prompt): the run
    that finished last wins, whichever sweep folder holds it (a rerun or a later sweep
    replaces a cell); returns them with the run folders they replaced."""
    done = cells[cells["status"].isin(ANALYSED)]
    if done.empty:
        return done, []
    # stable: on a tie, the folder given later wins (cells are read in the folders' order)
    ordered = done.sort_values(["finished_at", "run_id"], kind="stable")
    key = ["dataset", "model", "modality", "prompt_id"]
    latest = ordered.drop_duplicates(key, keep="last")
    ignored = sorted(set(ordered["run_dir"]) - set(latest["run_dir"]))
    return latest.sort_values(key), ignored


def write_sweep_summary(root: Path, cells: pd.DataFrame) -> SweepSummary:
    """``sweep_summary.json`` in a sweep directory: every cell of ``cells`` (a
    :func:`cell_table`) with its status (skipped ones with reasons, failed ones with their
    error counts and first error), and cells per status (``by_status``, which adds up to
    ``n_cells``); see :mod:`mmjudge.store.sweep_file`.

    A cell's κ, its interval, α and the number of items they are on are copied from its
    ``summary.json`` (:func:`mmjudge.metrics.scoring.agreement_summary`), not recomputed."""
    listed = (
        [
            SweepSummaryCell.of(Path(run_dir), summary)
            for run_dir, summary in zip(cells["run_dir"], cells["summary"], strict=True)
        ]
        if len(cells)
        else []
    )
    summary = SweepSummary.of(listed)
    write_sweep_file(root, summary)
    return summary


# --------------------------------------------------------------------------- labels

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass
class DatasetItems:
    """Every (query, result) item of one dataset that some judge answered, with the human
    grades. Items are numbered 0..n-1 in the order first seen."""

    name: str
    codes: dict[str, int] = field(default_factory=dict)
    """``"query_id<TAB>result_id"`` (as :attr:`mmjudge.data.Example.key`) → item number."""
    keys: list[str] = field(default_factory=list)
    """Item number → key."""
    query_codes: dict[str, int] = field(default_factory=dict)
    """Query id → query number."""
    _item_query: array[int] = field(default_factory=lambda: array("q"))
    _humans: dict[str, array[float]] = field(default_factory=dict)
    _frozen: dict[str, Any] = field(default_factory=dict)

    def add(self, key: str, query_id: str, human_labels: Any) -> int:
        """Number a new item and keep its human grades."""
        code = len(self.keys)
        self.codes[key] = code
        self.keys.append(key)
        query = self.query_codes.get(query_id)
        if query is None:
            query = self.query_codes[query_id] = len(self.query_codes)
        self._item_query.append(query)
        if type(human_labels) is dict or isinstance(human_labels, Mapping):
            humans = self._humans
            for name, grade in human_labels.items():
                values = humans.get(name)
                if values is None:
                    values = humans[name] = array("d")
                if len(values) < code:
                    values.extend([_NAN] * (code - len(values)))
                values.append(float(grade) if type(grade) is int else _grade(grade))
        if self._frozen:
            self._frozen.clear()
        return code

    @property
    def n(self) -> int:
        return len(self.keys)

    @property
    def item_query(self) -> IntArray:
        """Query number of each item."""
        if "query" not in self._frozen:
            self._frozen["query"] = np.frombuffer(self._item_query, dtype=np.int64).copy()
        result: IntArray = self._frozen["query"]
        return result

    @property
    def query_rank(self) -> IntArray:
        """Each item's query, numbered in the sorted order of query ids: what the bootstrap
        resamples, so that intervals match those computed from the ids themselves
        (``mmjudge agree``, ``mmjudge frontier``) whatever order the rows came in."""
        if "rank" not in self._frozen:
            ids = list(self.query_codes)  # in code order
            rank = np.empty(len(ids), dtype=np.int64)
            rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
            self._frozen["rank"] = rank[self.item_query]
        result: IntArray = self._frozen["rank"]
        return result

    @property
    def humans(self) -> dict[str, FloatArray]:
        """Annotator → grade of each item (``nan`` where the annotator gave none)."""
        if "humans" not in self._frozen:
            out = {}
            for name in sorted(self._humans):
                values = np.full(self.n, np.nan)
                raw = np.frombuffer(self._humans[name], dtype=np.float64)
                values[: raw.size] = raw
                out[name] = values
            self._frozen["humans"] = out
        result: dict[str, FloatArray] = self._frozen["humans"]
        return result

    @property
    def consensus(self) -> FloatArray:
        """The human consensus grade of each item (:func:`~mmjudge.metrics.consensus`)."""
        if "consensus" not in self._frozen:
            humans = self.humans
            self._frozen["consensus"] = (
                metrics.consensus(humans) if humans else np.full(self.n, np.nan)
            )
        result: FloatArray = self._frozen["consensus"]
        return result


@dataclass
class CellLabels:
    """One cell's answered rows (rows with an item-level error are left out, as in the
    run's summary), one per item."""

    items: IntArray
    """Item number (into the dataset's :class:`DatasetItems`) of each row."""
    label: FloatArray
    """The judge's grade; ``nan`` where the answer could not be parsed."""
    offsets: IntArray
    """Byte offset of each row in ``judgments.jsonl``."""
    path: Path
    """The judgments file."""
    n_rows: int
    """Rows read, errors included."""


def _grade(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return _NAN
    try:
        return float(value)
    except (TypeError, ValueError):
        return _NAN


def read_cell_labels(path: Path, items: DatasetItems) -> CellLabels:
    """Stream one judgments file; new items are added to ``items``.

    A partial last line (a killed run) is skipped. Where an item appears twice, the last
    row wins.
    """
    codes: array[int] = array("q")
    labels: array[float] = array("d")
    offsets: array[int] = array("q")
    get_code, add_code = items.codes.get, codes.append
    add_label, add_offset = labels.append, offsets.append
    n_rows = 0
    for start, (query_id, result_id, label, human_labels, error) in label_rows(path):
        n_rows += 1
        if error is not None:
            continue
        key = f"{query_id}\t{result_id}"  # f-strings format as str() does
        code = get_code(key)
        if code is None:
            code = items.add(key, str(query_id), human_grades(human_labels))
        add_code(code)
        add_label(float(label) if type(label) is int else _grade(label))  # as _grade
        add_offset(start)
    item_array = np.frombuffer(codes, dtype=np.int64).copy()
    label_array = np.frombuffer(labels, dtype=np.float64).copy()
    offset_array = np.frombuffer(offsets, dtype=np.int64).copy()
    if item_array.size:
        last = item_array.size - 1 - np.unique(item_array[::-1], return_index=True)[1]
        if last.size != item_array.size:
            last.sort()
            item_array, label_array, offset_array = (
                item_array[last],
                label_array[last],
                offset_array[last],
            )
    return CellLabels(item_array, label_array, offset_array, path, n_rows)


def without_items(labels: CellLabels, items: DatasetItems, keys: Sequence[str]) -> CellLabels:
    """``labels`` without the rows of the items ``keys`` name (``query_id<TAB>result_id``):
    those a trained judge learnt from, which its run's figures leave out too
    (:attr:`mmjudge.store.RunSummary.trained_on`)."""
    codes = [items.codes[key] for key in keys if key in items.codes]
    if not codes:
        return labels
    keep = ~np.isin(labels.items, np.asarray(codes, dtype=np.int64))
    return CellLabels(
        labels.items[keep], labels.label[keep], labels.offsets[keep], labels.path, labels.n_rows
    )
