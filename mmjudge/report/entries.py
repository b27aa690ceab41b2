"""Per test-bank entry: how often the judge found it covered, and what it does to the
system ranking (leave-one-entry-out Δτ), so a reviewer sees which entries matter.

For a bank cell, each entry's *coverage* is the share of its query's graded results that the
judge graded at least ``prompt.covered_from``. On a dataset with run files, the entry is then
left out: every result of its query gets the grade the cell's rule derives from the other
entries, the systems are ranked again under those labels (nDCG@10, on the items the cell
graded, as in the leaderboard) and Δτ is Kendall's τ with the human ranking without the entry
minus τ with it. A negative Δτ means the entry brings the judge's ranking closer to the
humans'.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mmjudge import metrics
from mmjudge.config import PromptConfig
from mmjudge.display import MISSING
from mmjudge.errors import DatasetError
from mmjudge.report.leaderboard import judge_name, system_runs
from mmjudge.store import JUDGMENTS, BankInfo, RunSummary, iter_rows
from mmjudge.testbank.bank import read_bank
from mmjudge.testbank.derive import derive

#: At most this many entries get a leave-one-out ranking per cell (each is a full ranking).
MAX_LEFT_OUT = 200
Row = dict[str, str]


def _prompt(summary: RunSummary) -> PromptConfig:
    raw = summary.config_part("prompt")
    names = {f.name for f in dataclasses.fields(PromptConfig)}
    return PromptConfig(**{k: v for k, v in raw.items() if k in names})


class _Graded:
    """A bank cell's rows: keys, human consensus and entry grades, aligned."""

    def __init__(self, run_dir: Path) -> None:
        self.queries: list[str] = []
        self.docs: list[str] = []
        self.human: list[float] = []
        self.entries: list[dict[str, int]] = []
        for row in iter_rows(run_dir / JUDGMENTS):
            grades = row.get("entry_grades")
            if row.get("error") or not grades:
                continue
            humans = {n: [g] for n, g in (row.get("human_labels") or {}).items() if g is not None}
            self.queries.append(str(row["query_id"]))
            self.docs.append(str(row["result_id"]))
            self.human.append(float(metrics.consensus(humans)[0]) if humans else math.nan)
            self.entries.append(dict(grades))

    def per_query_entries(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for query, grades in zip(self.queries, self.entries, strict=True):
            known = out.setdefault(query, [])
            known += [e for e in grades if e not in known]
        return out

    def labels(
        self, prompt: PromptConfig, grades: list[int], drop: str | None = None
    ) -> list[float]:
        sizes = {q: len(e) for q, e in self.per_query_entries().items()}
        out = []
        for query, entry_grades in zip(self.queries, self.entries, strict=True):
            kept = {e: g for e, g in entry_grades.items() if e != drop}
            n = sizes[query] - (1 if drop is not None and drop in entry_grades else 0)
            out.append(float(derive(prompt, grades, kept, n)) if n else math.nan)
        return out


def _tau(graded: _Graded, labels: list[float], runs: dict[str, Any], relevant_from: int) -> float:
    import ir_measures

    found = metrics.system_ranking_on_shared_items(
        np.asarray(graded.queries),
        np.asarray(graded.docs),
        np.asarray(graded.human),
        np.asarray(labels),
        runs,
        measures=[ir_measures.nDCG @ 10],
        relevant_from=relevant_from,
    )
    return next(iter(found.values())).kendall_tau if found else math.nan


def entry_rows(cells: pd.DataFrame) -> list[Row]:
    """One row per entry of every bank cell: coverage, and Δτ where the dataset has runs."""
    rows: list[Row] = []
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        info = summary.testbank
        if not info or summary.status.status == "skipped":
            continue
        rows += _cell_entries(summary, info, Path(cell["run_dir"]))
    return rows


def _cell_entries(summary: RunSummary, info: BankInfo, run_dir: Path) -> list[Row]:
    graded = _Graded(run_dir)
    prompt = _prompt(summary)
    dataset = summary.config_part("dataset")
    scale = summary.cell.grades or (dataset.get("scale") or {}).get("grades") or []
    grades = [int(g) for g in scale]
    relevant_from = int((dataset.get("scale") or {}).get("relevant_from", 2))
    runs = system_runs(summary.dataset_config())
    texts = _entry_texts(info)
    base = _tau(graded, graded.labels(prompt, grades), runs, relevant_from) if runs else math.nan
    rows: list[Row] = []
    for query, entries in graded.per_query_entries().items():
        for entry in entries:
            given = [g[entry] for g in graded.entries if entry in g]
            covered = sum(g >= prompt.covered_from for g in given) / len(given)
            delta = math.nan
            if runs and len(rows) < MAX_LEFT_OUT:
                labels = graded.labels(prompt, grades, drop=entry)
                delta = _tau(graded, labels, runs, relevant_from) - base
            rows.append(
                {
                    "dataset": summary.cell.dataset,
                    "judge": judge_name(summary),
                    "query": query,
                    "entry": texts.get(entry, entry),
                    "covered": f"{covered:.0%} of {len(given)}",
                    "delta_tau": MISSING if math.isnan(delta) else f"{delta:+.3f}",
                }
            )
    return rows


def _entry_texts(info: BankInfo) -> dict[str, str]:
    path = Path(info.path or "")
    try:
        bank = read_bank(path) if path.is_file() else None
    except DatasetError:
        return {}
    if bank is None:
        return {}
    return {
        e.id: e.text + (" (visual)" if e.visual else "") for g in bank.entries.values() for e in g
    }
