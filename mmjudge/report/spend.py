"""Report sections read straight from run summaries and records: spend against forecast,
and, for datasets that come with system runs, how the judge's labels rank those systems."""

from __future__ import annotations

import pandas as pd

from mmjudge.display import MISSING, number, price, usd
from mmjudge.report.analysis import MODALITY_NAMES
from mmjudge.report.leaderboard import CellRanking
from mmjudge.store import CostFigures, Member, RunSummary
from mmjudge.store.blocks import possible_extra


def _resent(cost: CostFigures) -> str:
    """Requests sent again after a stop, and their estimated cost (part of what was paid)."""
    n = cost.resent_requests
    return f"{n} (≈{usd(cost.resent_usd)})" if n else "0"


def _possible(summary: RunSummary) -> str:
    """Sends that may have been billed without an answer, and what they may have cost (at
    their forecasts; not part of what was paid)."""
    n, dollars = possible_extra(summary.cost)
    return f"+{usd(dollars)} ({n} unanswered)" if n else MISSING


def _judge(summary: RunSummary) -> str:
    cell = summary.cell
    return f"{cell.model} · {cell.modality} · {cell.prompt_id}"


def _status(summary: RunSummary, race: object) -> str:
    """The cell's status, with what a race did with it (a stopped cell is complete on fewer
    items than the others)."""
    status = summary.status.status
    return f"{status} · race: {race}" if isinstance(race, str) else status


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
        ratio = MISSING
        if expected:
            ratio = f"{total / float(expected) - 1:+.1%}"
        rows.append(
            {
                "dataset": summary.cell.dataset,
                "judge": _judge(summary),
                "model": summary.cell.model,
                "modality": MODALITY_NAMES.get(summary.cell.modality, ""),
                "prompt": summary.cell.prompt_id,
                "status": _status(summary, cell.get("race")),
                "n": str(summary.n_judgments),
                "total": usd(total),
                "spent": usd(cost.spent_usd),
                "resent": _resent(cost),
                "possible": _possible(summary),
                "forecast": usd(float(expected) if expected is not None else None),
                "difference": ratio,
                "per_million": price(cost.usd_per_million),
                "image_per_million": price(cost.image_usd_per_million),
                "text_per_million": price(cost.text_usd_per_million),
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
                "escalation": MISSING if rate is None else f"{float(rate):.1%}",
                "kappa": number(kappa),
                "per_million": price(summary.cost.usd_per_million),
            }
        )
    return rows


def _member(member: Member) -> str:
    return member.name
