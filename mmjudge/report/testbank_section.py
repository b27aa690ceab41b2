"""Test-bank grading in the report: each bank design (``prompt=nuggets``, ``questions``)
against direct grading by the same model and modality, and, for datasets with system runs,
how much of each query's bank every system covers in its top k.

The comparison is the report's paired comparison (:func:`mmjudge.report.analysis.compare`,
on the items both cells graded, intervals resampling queries); the direct cell is the
model's ``default`` prompt on the same modality, else its first direct prompt.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from mmjudge import metrics
from mmjudge.display import MISSING
from mmjudge.report.analysis import (
    MODALITY_NAMES,
    Analysis,
    Cell,
    DatasetStats,
    compare,
    load_labels,
)
from mmjudge.report.leaderboard import judge_name, system_runs
from mmjudge.store import JUDGMENTS, RunSummary, iter_rows

Row = dict[str, str]
COVERAGE_K = 10


def is_bank_cell(cell: Cell) -> bool:
    return bool(cell.summary.testbank)


def _direct_partner(stats: DatasetStats, cell: Cell) -> Cell | None:
    direct = [
        c
        for c in stats.cells
        if not is_bank_cell(c)
        and c.judge.model == cell.judge.model
        and c.judge.modality == cell.judge.modality
    ]
    direct.sort(key=lambda c: (c.judge.prompt_id != "default", c.judge.prompt_id))
    return direct[0] if direct else None


def _num(value: float, digits: int = 3, sign: bool = False) -> str:
    if not math.isfinite(value):
        return MISSING
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def design_rows(analysis: Analysis) -> list[Row]:
    """One row per test-bank cell: its κ and cost beside direct grading's, Δκ with the paired
    interval, Δ$ per million judgments, and the bank and rule it used."""
    rows = []
    for stats in analysis.datasets:
        for cell in (c for c in stats.cells if is_bank_cell(c)):
            bank = cell.summary.testbank
            assert bank is not None  # a bank cell
            partner = _direct_partner(stats, cell)
            found = None
            if partner is not None:
                load_labels(stats, cell)
                load_labels(stats, partner)
                found = compare(stats.items, stats.grades, cell, partner, analysis.n_boot)
            verdict = "no direct cell to compare"
            if found is not None:
                verdict = (
                    "not distinguishable"
                    if not found.distinguishable
                    else "bank better"
                    if found.difference > 0
                    else "direct better"
                )
            rows.append(
                {
                    "dataset": stats.name,
                    "model": cell.judge.model,
                    "modality": MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
                    "design": cell.judge.prompt_id,
                    "direct": partner.judge.prompt_id if partner else MISSING,
                    "kappa_bank": _num(found.kappa_a) if found else _num(cell.kappa.estimate),
                    "kappa_direct": _num(found.kappa_b) if found else MISSING,
                    "difference": _num(found.difference, sign=True) if found else MISSING,
                    "ci": (
                        f"[{_num(found.low, sign=True)}, {_num(found.high, sign=True)}]"
                        if found
                        else MISSING
                    ),
                    "n": f"{found.n_items:,}" if found else MISSING,
                    "usd_difference": (
                        f"{cell.usd_per_million - partner.usd_per_million:+,.2f}"
                        if partner
                        else MISSING
                    ),
                    "verdict": verdict,
                    "bank": f"{bank.kind} v{bank.version} "
                    f"({bank.entries} entries, {bank.calls} calls)",
                    "rule": bank.derivation.text,
                }
            )
    return rows


# --------------------------------------------------------------------------- coverage


def _entry_grades(run_dir: Path) -> dict[str, dict[str, dict[str, int]]]:
    """query → result → entry grades, from a bank cell's records."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    path = run_dir / JUDGMENTS
    if not path.is_file():
        return out
    for row in iter_rows(path):
        grades = row.get("entry_grades")
        if row.get("error") or not grades:
            continue
        out.setdefault(str(row["query_id"]), {})[str(row["result_id"])] = dict(grades)
    return out


def coverage(
    graded: dict[str, dict[str, dict[str, int]]],
    run: dict[str, dict[str, float]],
    covered_from: int,
    k: int = COVERAGE_K,
) -> float:
    """Mean over the bank's queries of the share of a query's entries that some result in
    the system's top ``k`` covers (graded at least ``covered_from``); a result the judge did
    not grade covers nothing. A query's entries are those its graded results were asked
    about."""
    shares = []
    for query, results in graded.items():
        entries = {e for grades in results.values() for e in grades}
        if not entries:
            continue
        ranked = sorted((run.get(query) or {}).items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        covered = {
            entry
            for doc, _ in ranked
            for entry, grade in (results.get(doc) or {}).items()
            if grade >= covered_from
        }
        shares.append(len(covered) / len(entries))
    return sum(shares) / len(shares) if shares else math.nan


def coverage_rows(cells: pd.DataFrame, k: int = COVERAGE_K) -> list[Row]:
    """Per bank cell on a dataset with run files: each system's coverage at ``k`` and its
    rank, beside its rank by nDCG@k under the human labels, with Kendall's τ between the
    two orderings."""
    import ir_measures

    rows: list[Row] = []
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        bank = summary.testbank
        runs = system_runs(summary.dataset_config()) if bank else None
        if not runs:
            continue
        graded = _entry_grades(Path(cell["run_dir"]))
        prompt = summary.config_part("prompt")
        covered_from = int(prompt.get("covered_from", 4))
        scores = {name: coverage(graded, run, covered_from, k) for name, run in runs.items()}
        human = _human_ndcg(Path(cell["run_dir"]), runs, ir_measures.nDCG @ k)
        tau = metrics.kendall_tau([human.get(n, math.nan) for n in runs], [scores[n] for n in runs])
        order = sorted(scores, key=lambda n: (-scores[n], n))
        human_order = sorted(human, key=lambda n: (-human[n], n))
        for name in order:
            rows.append(
                {
                    "dataset": summary.cell.dataset,
                    "judge": judge_name(summary),
                    "system": name,
                    "coverage": _num(scores[name]),
                    "rank": str(order.index(name) + 1),
                    "human_ndcg": _num(human.get(name, math.nan)),
                    "human_rank": str(human_order.index(name) + 1) if name in human else MISSING,
                    "tau": _num(tau),
                }
            )
    return rows


def _human_ndcg(run_dir: Path, runs: dict[str, Any], measure: Any) -> dict[str, float]:
    """Each system's nDCG under the human consensus on the items the cell graded."""
    import ir_measures

    qrels = []
    for row in iter_rows(run_dir / JUDGMENTS):
        humans = {n: [g] for n, g in (row.get("human_labels") or {}).items() if g is not None}
        if not humans:
            continue
        grade = metrics.consensus(humans)[0]
        if math.isfinite(grade):
            qrels.append(ir_measures.Qrel(str(row["query_id"]), str(row["result_id"]), int(grade)))
    out = {}
    for name, run in runs.items():
        scored = [
            ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()
        ]
        out[name] = float(ir_measures.calc_aggregate([measure], qrels, scored).get(measure, 0.0))
    return out
