"""Report sections read straight from run summaries and records: spend against forecast,
and, for datasets that come with system runs, how the judge's labels rank those systems."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from mmjudge.report.analysis import MODALITY_NAMES
from mmjudge.report.leaderboard import CellRanking


def _money(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"${value:,.4f}"


def _resent(cost: dict[str, Any]) -> str:
    """Requests sent again after a stop, and their estimated cost (part of what was paid)."""
    n = int(cost.get("resent_requests") or 0)
    return f"{n} (≈{_money(float(cost.get('resent_usd') or 0.0))})" if n else "0"


def spend_rows(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Per completed cell: what it cost, what this run paid, and the forecast beside it."""
    rows = []
    for _, cell in cells.iterrows():
        summary: dict[str, Any] = cell["summary"]
        if summary.get("status") == "skipped" or summary.get("kind") not in (None, "single"):
            continue
        cost = summary.get("cost") or {}
        forecast = summary.get("forecast") or {}
        total = float(cost.get("total_usd") or 0.0)
        expected = forecast.get("usd")
        ratio = "–"
        if expected:
            ratio = f"{total / float(expected) - 1:+.1%}"
        rows.append(
            {
                "dataset": str(summary.get("dataset")),
                "judge": f"{summary.get('model')} · {summary.get('modality')} · "
                f"{summary.get('prompt_id')}",
                "model": str(summary.get("model")),
                "modality": MODALITY_NAMES.get(str(summary.get("modality")), ""),
                "prompt": str(summary.get("prompt_id")),
                "status": str(summary.get("status", "complete")),
                "n": str(summary.get("n_judgments", 0)),
                "total": _money(total),
                "spent": _money(float(cost.get("spent_usd") or 0.0)),
                "resent": _resent(cost),
                "forecast": _money(float(expected) if expected is not None else None),
                "difference": ratio,
                "per_million": f"{float(cost.get('usd_per_million') or 0.0):,.2f}",
                "image_per_million": f"{float(cost.get('image_usd_per_million') or 0.0):,.2f}",
                "text_per_million": f"{float(cost.get('text_usd_per_million') or 0.0):,.2f}",
            }
        )
    return rows


def system_ranking_rows(rankings: list[CellRanking]) -> list[dict[str, str]]:
    """Kendall's τ, Spearman's ρ and RBO between system rankings under human and judge labels,
    for every cell whose dataset lists TREC run files (``dataset.runs``)."""
    return [
        {
            "dataset": found.dataset,
            "judge": found.judge,
            "measure": found.agreement.measure,
            "systems": str(found.systems),
            "tau": f"{found.agreement.kendall_tau:.3f}",
            "rho": f"{found.agreement.spearman_rho:.3f}",
            "rbo": f"{found.agreement.rbo:.3f}",
        }
        for found in rankings
    ]


def ensemble_rows(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Panels and cascades built from saved records: members, rule, escalation rate, κ, cost."""
    rows = []
    for _, cell in cells.iterrows():
        summary: dict[str, Any] = cell["summary"]
        kind = summary.get("kind")
        if kind not in ("panel", "cascade"):
            continue
        members = summary.get("members") or []
        names = [_member(m) for m in members]
        rate = summary.get("escalation_rate")
        kappa = (summary.get("metrics") or {}).get("kappa")
        cost = summary.get("cost") or {}
        rows.append(
            {
                "dataset": str(summary.get("dataset")),
                "kind": str(kind),
                "judge": str(summary.get("model")),
                "how": str(summary.get("aggregator") or "+".join(summary.get("rules") or [])),
                "members": ", ".join(names),
                "escalation": "–" if rate is None else f"{float(rate):.1%}",
                "kappa": "–" if kappa is None else f"{float(kappa):.3f}",
                "per_million": f"{float(cost.get('usd_per_million') or 0.0):,.2f}",
            }
        )
    return rows


def _member(member: Any) -> str:
    if not isinstance(member, dict):
        return str(member)
    name = f"{member.get('model')}/{member.get('prompt_id')}"
    role = member.get("role")
    return name if role in (None, "member") else f"{name} ({role})"
