"""Report sections read straight from run summaries and records: spend against forecast,
and, for datasets that come with system runs, how the judge's labels rank those systems."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from mmjudge import PROJECT_ROOT
from mmjudge.agreement import metrics
from mmjudge.qrels import read_run
from mmjudge.report.analysis import MODALITY_NAMES
from mmjudge.runs import CostFigures, Member, RunSummary, annotators, judgments_path, load_judgments


def _money(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"${value:,.4f}"


def _resent(cost: CostFigures) -> str:
    """Requests sent again after a stop, and their estimated cost (part of what was paid)."""
    n = cost.resent_requests
    return f"{n} (≈{_money(cost.resent_usd)})" if n else "0"


def _judge(summary: RunSummary) -> str:
    cell = summary.cell
    return f"{cell.model} · {cell.modality} · {cell.prompt_id}"


def spend_rows(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Per completed cell: what it cost, what this run paid, and the forecast beside it."""
    rows = []
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        if summary.status.status == "skipped" or summary.kind != "single":
            continue
        cost = summary.cost
        total = cost.total_usd
        expected = summary.forecast.usd if summary.forecast is not None else None
        ratio = "–"
        if expected:
            ratio = f"{total / float(expected) - 1:+.1%}"
        rows.append(
            {
                "dataset": summary.cell.dataset,
                "judge": _judge(summary),
                "model": summary.cell.model,
                "modality": MODALITY_NAMES.get(summary.cell.modality, ""),
                "prompt": summary.cell.prompt_id,
                "status": summary.status.status,
                "n": str(summary.n_judgments),
                "total": _money(total),
                "spent": _money(cost.spent_usd),
                "resent": _resent(cost),
                "forecast": _money(float(expected) if expected is not None else None),
                "difference": ratio,
                "per_million": f"{cost.usd_per_million:,.2f}",
                "image_per_million": f"{cost.image_usd_per_million:,.2f}",
                "text_per_million": f"{cost.text_usd_per_million:,.2f}",
            }
        )
    return rows


def system_ranking_rows(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Kendall's τ, Spearman's ρ and RBO between system rankings under human and judge labels,
    for every cell whose dataset lists TREC run files (``dataset.runs``)."""
    rows = []
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        dataset = summary.config_part("dataset")
        run_files = [str(r) for r in dataset.get("runs") or []]
        if summary.status.status == "skipped" or not run_files:
            continue
        root = Path(str(dataset.get("path", ".")))
        root = root if root.is_absolute() else PROJECT_ROOT / root
        paths = [Path(p) if Path(p).is_absolute() else root / p for p in run_files]
        if not all(p.is_file() for p in paths):
            continue
        frame = load_judgments(judgments_path(cell["run_dir"]))
        names = annotators(frame)
        if frame.empty or not names:
            continue
        frame = frame[frame["error"].isna()].drop_duplicates(["query_id", "result_id"], keep="last")
        human = metrics.consensus(
            {n: frame[f"human:{n}"].to_numpy(dtype=float, na_value=np.nan) for n in names}
        )
        judge = frame["label"].to_numpy(dtype=float, na_value=np.nan)
        runs = {p.stem: read_run(p) for p in paths}
        relevant_from = int(summary.scale_settings().get("relevant_from", 2))
        found = metrics.system_ranking_on_shared_items(
            frame["query_id"].to_numpy(),
            frame["result_id"].to_numpy(),
            human,
            judge,
            runs,
            relevant_from=relevant_from,
        )
        for measure, agreement in found.items():
            rows.append(
                {
                    "dataset": summary.cell.dataset,
                    "judge": _judge(summary),
                    "measure": measure,
                    "systems": str(len(runs)),
                    "tau": f"{agreement.kendall_tau:.3f}",
                    "rho": f"{agreement.spearman_rho:.3f}",
                    "rbo": f"{agreement.rbo:.3f}",
                }
            )
    return rows


def ensemble_rows(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Panels and cascades built from saved records: members, rule, escalation rate, κ, cost."""
    rows = []
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        ensemble = summary.ensemble
        if summary.kind not in ("panel", "cascade") or ensemble is None:
            continue
        rate = ensemble.escalation_rate
        kappa = summary.metrics.kappa
        rows.append(
            {
                "dataset": summary.cell.dataset,
                "kind": summary.kind,
                "judge": summary.cell.model,
                "how": ensemble.how,
                "members": ", ".join(_member(m) for m in ensemble.members),
                "escalation": "–" if rate is None else f"{float(rate):.1%}",
                "kappa": "–" if kappa is None else f"{float(kappa):.3f}",
                "per_million": f"{summary.cost.usd_per_million:,.2f}",
            }
        )
    return rows


def _member(member: Member) -> str:
    return member.name
