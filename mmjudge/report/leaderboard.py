"""System leaderboards for datasets that come with retrieval runs (``dataset.runs``).

Each run file is one system. Every cell's labels score the systems (ir_measures, through
:func:`mmjudge.metrics.ranking.system_ranking_on_shared_items`, the definition ``mmjudge.agree``
uses), beside the human consensus on the same items, and the two orderings are compared by
Kendall's τ, Spearman's ρ and RBO. The page shows the comparison and one leaderboard per
dataset and measure (the systems' scores under the human labels and under each judge's);
``leaderboard.csv`` holds every number unrounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mmjudge import metrics
from mmjudge.config import DatasetConfig
from mmjudge.data.qrels import Run, read_run
from mmjudge.display import MISSING
from mmjudge.locations import resolve_path
from mmjudge.report.csv_table import CsvRow, write_csv
from mmjudge.store import JUDGMENTS, RunSummary, annotators, load_judgments

LEADERBOARD_CSV = "leaderboard.csv"


@dataclass(frozen=True)
class CellRanking:
    """One cell's system-ranking agreement under one measure."""

    dataset: str
    judge: str
    """``model · modality · prompt``."""
    systems: int
    agreement: metrics.RankingAgreement


def system_runs(dataset: DatasetConfig | None) -> dict[str, Run] | None:
    """The dataset config's run files read by name (file stem); None without a config, when
    it lists none or when one is missing."""
    run_files = [str(r) for r in dataset.runs] if dataset is not None else []
    if dataset is None or not run_files:
        return None
    root = resolve_path(str(dataset.path))
    paths = [Path(p) if Path(p).is_absolute() else root / p for p in run_files]
    if not all(p.is_file() for p in paths):
        return None
    return {p.stem: read_run(p) for p in paths}


def judge_name(summary: RunSummary) -> str:
    cell = summary.cell
    return f"{cell.model} · {cell.modality} · {cell.prompt_id}"


def cell_rankings(cells: pd.DataFrame) -> list[CellRanking]:
    """Every cell whose dataset lists run files, one entry per measure."""
    out: list[CellRanking] = []
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        dataset = summary.config_part("dataset")
        if summary.status.status == "skipped":
            continue
        runs = system_runs(summary.dataset_config())
        if runs is None:
            continue
        frame = load_judgments(Path(cell["run_dir"]) / JUDGMENTS)
        names = annotators(frame)
        if frame.empty or not names:
            continue
        frame = frame[frame["error"].isna()].drop_duplicates(["query_id", "result_id"], keep="last")
        human = metrics.consensus(
            {n: frame[f"human:{n}"].to_numpy(dtype=float, na_value=np.nan) for n in names}
        )
        judge = frame["label"].to_numpy(dtype=float, na_value=np.nan)
        relevant_from = int((dataset.get("scale") or {}).get("relevant_from", 2))
        found = metrics.system_ranking_on_shared_items(
            frame["query_id"].to_numpy(),
            frame["result_id"].to_numpy(),
            human,
            judge,
            runs,
            relevant_from=relevant_from,
        )
        for agreement in found.values():
            out.append(CellRanking(summary.cell.dataset, judge_name(summary), len(runs), agreement))
    return out


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    order = sorted(scores, key=lambda name: (-scores[name], name))
    return {name: i + 1 for i, name in enumerate(order)}


def leaderboard_rows(rankings: list[CellRanking]) -> list[CsvRow]:
    """One CSV row per (dataset, judge, measure, system): its score and rank under the human
    labels and under the judge's, and the orderings' τ, ρ and RBO."""
    rows: list[CsvRow] = []
    for found in rankings:
        a = found.agreement
        human_rank, judge_rank = _ranks(a.human_scores), _ranks(a.judge_scores)
        for system in sorted(a.human_scores, key=lambda s: human_rank[s]):
            rows.append(
                {
                    "dataset": found.dataset,
                    "judge": found.judge,
                    "measure": a.measure,
                    "system": system,
                    "human_score": a.human_scores[system],
                    "human_rank": human_rank[system],
                    "judge_score": a.judge_scores.get(system, math.nan),
                    "judge_rank": judge_rank.get(system, ""),
                    "kendall_tau": a.kendall_tau,
                    "spearman_rho": a.spearman_rho,
                    "rbo": a.rbo,
                }
            )
    return rows


@dataclass(frozen=True)
class BoardRow:
    """A system's line of a leaderboard."""

    system: str
    cells: list[str]
    """Its score and rank under the human labels, then under each judge's."""


@dataclass(frozen=True)
class Board:
    """One dataset's leaderboard under one measure."""

    dataset: str
    measure: str
    judges: list[str]
    taus: list[str]
    """Each judge's Kendall τ against the human ordering."""
    rows: list[BoardRow]
    """Systems in human order."""


def boards(rankings: list[CellRanking]) -> list[Board]:
    """Per (dataset, measure): systems in human order, with each judge's score and rank."""
    grouped: dict[tuple[str, str], list[CellRanking]] = {}
    for found in rankings:
        grouped.setdefault((found.dataset, found.agreement.measure), []).append(found)
    out = []
    for (dataset, measure), members in grouped.items():
        # Each cell scores the systems on the items it graded; the human column is the first
        # cell's (every judge column says its own human τ beside it).
        human = members[0].agreement.human_scores
        human_rank = _ranks(human)
        judges = [(m.judge, m.agreement) for m in members]
        rows = []
        for system in sorted(human, key=lambda s: human_rank[s]):
            cells = [f"{human[system]:.3f} (#{human_rank[system]})"]
            for _, a in judges:
                score = a.judge_scores.get(system)
                rank = _ranks(a.judge_scores).get(system)
                cells.append(MISSING if score is None else f"{score:.3f} (#{rank})")
            rows.append(BoardRow(system, cells))
        out.append(
            Board(
                dataset=dataset,
                measure=measure,
                judges=[name for name, _ in judges],
                taus=[_fmt(a.kendall_tau) for _, a in judges],
                rows=rows,
            )
        )
    return out


def _fmt(value: float) -> str:
    return MISSING if math.isnan(value) else f"{value:.3f}"


def write_leaderboard(rankings: list[CellRanking], out: Path) -> str | None:
    """``leaderboard.csv`` in ``out`` (removed when there are no rankings); its name or None."""
    path = write_csv(out / LEADERBOARD_CSV, leaderboard_rows(rankings))
    return None if path is None else path.name
