"""The report's tables as plain rows of display strings (the template only lays them out)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mmjudge.config.names import cell_display_name
from mmjudge.display import MISSING, price
from mmjudge.keyguard import redact
from mmjudge.report.analysis import (
    MODALITY_NAMES,
    Analysis,
    Cell,
    Comparison,
    Interval,
    Judge,
)
from mmjudge.report.findings.prose import (
    NOT_DISTINGUISHABLE,
    difference,
    interval,
    num,
)
from mmjudge.store import RunSummary
from mmjudge.store.blocks import SINGLE
from mmjudge.store.status import COMPLETE, DRY_RUN, PARTIAL, SKIPPED

Row = dict[str, Any]


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def distribution(counts: Mapping[Any, Any] | None) -> str:
    """``{"0": 35, "1": 40, "2": 25}`` as ``0:35% 1:40% 2:25%``."""
    if not counts:
        return MISSING
    total = sum(int(v) for v in counts.values())
    if total == 0:
        return MISSING
    parts = []
    for grade, count in counts.items():
        label = str(grade)
        if label.endswith(".0"):
            label = label[:-2]
        parts.append(f"{label}:{round(100 * int(count) / total)}%")
    return " ".join(parts)


def tokens(value: Any) -> str:
    x = _float(value)
    return MISSING if not math.isfinite(x) else f"{x:,.0f}"


def seconds(value: Any) -> str:
    x = _float(value)
    if not math.isfinite(x):
        return MISSING
    return f"{x:.2f}" if x >= 0.01 else f"{x:.0e}" if x > 0 else "0"


# --------------------------------------------------------------------------- across datasets


@dataclass(frozen=True)
class KappaRow:
    """One judge's κ on each dataset, its mean and whether it differs by dataset."""

    judge: str
    model: str
    modality: str
    prompt: str
    kappas: list[str]
    """κ with its interval on each dataset, in the table's order (``not run`` where it did not)."""
    mean: str
    """Its mean over the datasets it ran on."""
    usd: str
    """Its mean dollars per million judgments."""
    verdict: str
    """``differs by dataset``, not distinguishable, or ``–`` with one dataset."""


@dataclass(frozen=True)
class KappaByDataset:
    """The κ-by-dataset table: a row per judge, and the human–human κ of each dataset."""

    datasets: list[str]
    rows: list[KappaRow]
    """Highest mean κ first."""
    ceilings: list[str]
    """Each dataset's human–human κ (a range where the pairs differ)."""


def kappa_by_dataset(analysis: Analysis) -> KappaByDataset:
    names = [d.name for d in analysis.datasets]
    judges: dict[Judge, dict[str, Cell]] = {}
    for stats in analysis.datasets:
        for cell in stats.cells:
            judges.setdefault(cell.judge, {})[stats.name] = cell
    averages = {a.judge: a for a in analysis.averages}
    rows = []
    for judge, cells in judges.items():
        known = [c for c in cells.values() if c.kappa.known]
        verdict = MISSING
        if len(known) > 1:
            high = max(known, key=lambda c: c.kappa.estimate)
            low = min(known, key=lambda c: c.kappa.estimate)
            verdict = (
                NOT_DISTINGUISHABLE if high.kappa.overlaps(low.kappa) else "differs by dataset"
            )
        average = averages.get(judge)
        row = KappaRow(
            judge=analysis.judge_name(judge),
            model=judge.model,
            modality=MODALITY_NAMES.get(judge.modality, judge.modality),
            prompt=judge.prompt_id,
            kappas=[interval(cells[n].kappa) if n in cells else "not run" for n in names],
            mean=interval(average.kappa) if average else MISSING,
            usd=price(average.usd_per_million) if average else MISSING,
            verdict=verdict,
        )
        rows.append((-(average.kappa.estimate if average else -math.inf), row))
    rows.sort(key=lambda pair: (pair[0], pair[1].judge))
    return KappaByDataset(
        datasets=names,
        rows=[row for _, row in rows],
        ceilings=[_ceiling(stats.ceiling) for stats in analysis.datasets],
    )


def _ceiling(ceiling: tuple[float, float] | None) -> str:
    """The human–human κ of a dataset: one value, a range, or ``–`` without two annotators."""
    if ceiling is None:
        return MISSING
    return num(ceiling[0]) if ceiling[0] == ceiling[1] else f"{num(ceiling[0])}–{num(ceiling[1])}"


@dataclass(frozen=True)
class EffectRow:
    """A model with and without the image on one dataset, paired on the items both answered."""

    model: str
    prompt: str
    modality: str
    comparison: str
    """``image + text − text only``."""
    dataset: str
    kappa_a: str
    """κ with the image, on the shared items."""
    kappa_b: str
    """κ on text only, on the shared items."""
    difference: str
    ci: str
    """The paired interval of the difference."""
    p: str
    n: str
    """Shared items."""
    verdict: str


def _effect_row(name: str, c: Comparison) -> EffectRow:
    verdict = (
        NOT_DISTINGUISHABLE
        if not c.distinguishable
        else "image helps"
        if c.difference > 0
        else "image hurts"
    )
    modality = MODALITY_NAMES.get(c.a.judge.modality, c.a.judge.modality)
    return EffectRow(
        model=c.a.judge.model,
        prompt=c.a.judge.prompt_id,
        modality=modality,
        comparison=f"{modality} − text only",
        dataset=name,
        kappa_a=num(c.kappa_a, 3),
        kappa_b=num(c.kappa_b, 3),
        difference=num(c.difference, 3, sign=True),
        ci=f"[{num(c.low, 3, sign=True)}, {num(c.high, 3, sign=True)}]",
        p="< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3f}",
        n=f"{c.n_items:,}",
        verdict=verdict,
    )


def image_effects(analysis: Analysis) -> list[EffectRow]:
    rows = [_effect_row(d.name, c) for d in analysis.datasets for c in d.modality_effects]
    return sorted(rows, key=lambda r: (r.model, r.prompt, r.comparison, r.dataset))


def chance_and_humans(analysis: Analysis) -> dict[str, str]:
    """Per dataset, chance and the human–human κ as one cell of text (``chance 0.00 ·
    humans 0.78``), for the tables whose κ has no row of its own to set them against."""
    return {
        stats.name: f"chance 0.00 · humans {_ceiling(stats.ceiling)}" for stats in analysis.datasets
    }


def against_chance(kappa: Interval, ceiling: tuple[float, float] | None) -> str:
    """Where an interval sits between chance (κ 0) and the human–human κ, in words."""
    place = "above chance" if kappa.above_chance else "not above chance (interval reaches 0)"
    if ceiling is None:
        return f"{place}; no human–human κ"
    return f"{place}; humans {_ceiling(ceiling)}"


@dataclass(frozen=True)
class FrontierRow:
    """A judge on the cost–κ frontier, with its step from the next cheaper one."""

    dataset: str
    """The dataset, or ``average over datasets``."""
    judge: str
    model: str
    """The model, modality and prompt the table's filters match."""
    modality: str
    prompt: str
    usd: str
    kappa: str
    """κ with its interval."""
    scale: str
    """Where κ sits between chance and the humans, in words."""
    step: str
    """Δκ from the next cheaper frontier judge (``cheapest`` for the first)."""
    verdict: str


def _step_verdict(step: Comparison | None) -> str:
    if step is None:
        return MISSING
    if not step.distinguishable:
        return NOT_DISTINGUISHABLE
    return "better" if step.difference > 0 else "worse on shared items"


def frontier_rows(analysis: Analysis) -> list[FrontierRow]:
    rows = []
    for stats in analysis.datasets:
        steps = {id(c.a): c for c in stats.frontier_steps}
        for cell in stats.frontier_cells:
            step = steps.get(id(cell))
            rows.append(
                FrontierRow(
                    dataset=stats.name,
                    judge=analysis.judge_name(cell.judge),
                    model=cell.judge.model,
                    modality=MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
                    prompt=cell.judge.prompt_id,
                    usd=price(cell.usd_per_million),
                    kappa=interval(cell.kappa),
                    scale=against_chance(cell.kappa, stats.ceiling),
                    step=(
                        f"{difference(step)} vs {analysis.judge_name(step.b.judge)}"
                        if step
                        else "cheapest"
                    ),
                    verdict=_step_verdict(step),
                )
            )
    if len(analysis.datasets) > 1:
        for a in analysis.average_frontier:
            rows.append(
                FrontierRow(
                    dataset="average over datasets",
                    judge=analysis.judge_name(a.judge),
                    model=a.judge.model,
                    modality=MODALITY_NAMES.get(a.judge.modality, a.judge.modality),
                    prompt=a.judge.prompt_id,
                    usd=price(a.usd_per_million),
                    kappa=interval(a.kappa),
                    scale=against_chance(a.kappa, None).replace(
                        "no human–human κ", "humans: see each dataset"
                    ),
                    step=f"mean over {len(a.datasets)} dataset(s): {', '.join(a.datasets)}",
                    verdict=MISSING,
                )
            )
    return rows


# --------------------------------------------------------------------------- the rest


def failures(cells: pd.DataFrame) -> list[Row]:
    """Cells with failed judgments, unparseable answers or an early stop: partial ones
    (analysed without their failed rows), and failed, interrupted and budget-stopped ones
    (not analysed)."""
    wanted = ~cells["status"].isin([COMPLETE, SKIPPED, DRY_RUN]) & (cells["kind"] == "single")
    rows = []
    for _, cell in cells[wanted].sort_values(["dataset", "model", "modality"]).iterrows():
        n = int(cell["n"] or 0)
        errors = int(cell["n_errors"] or 0)
        kinds = dict(cell["errors_by_kind"] or {})
        unparseable = int(cell["n_unparseable"] or 0)
        if unparseable:  # answers without a grade: no judgment either
            kinds["unparseable answers"] = unparseable
        rows.append(
            {
                "dataset": str(cell["dataset"]),
                "model": str(cell["model"]),
                "modality": MODALITY_NAMES.get(str(cell["modality"]), str(cell["modality"])),
                "prompt": str(cell["prompt_id"]),
                "status": str(cell["status"]).replace("_", " "),
                "analysed": "yes, without its failed rows" if cell["status"] == PARTIAL else "no",
                "errors": f"{errors:,} of {n:,}" if n else MISSING,
                "kinds": ", ".join(f"{k} {v:,}" for k, v in kinds.items()) or MISSING,
                "first_error": str(cell["first_error"] or MISSING),
                "reason": str(cell["status_reason"] or MISSING),
            }
        )
    return rows


def skipped(cells: pd.DataFrame) -> list[Row]:
    rows = cells[cells["status"] == SKIPPED]
    return [
        {
            "dataset": str(cell["dataset"]),
            "model": str(cell["model"]),
            "modality": MODALITY_NAMES.get(str(cell["modality"]), str(cell["modality"])),
            "prompt": str(cell["prompt_id"]),
            "status": str(cell["status"]),
            "reason": str(cell["skip_reason"] or MISSING),
        }
        for _, cell in rows.sort_values(["dataset", "model", "modality"]).iterrows()
    ]


def _price_rows(cells: pd.DataFrame) -> list[Row]:
    sheets: dict[str, Row] = {}
    for _, cell in cells.iterrows():
        summary: RunSummary = cell["summary"]
        pricing = summary.config_part("pricing")
        model = summary.config_part("model")
        date = str(pricing.get("date") or cell["pricing_sheet"] or "unknown")
        sheet = sheets.setdefault(
            date,
            {
                "date": date,
                "currency": pricing.get("currency", "USD"),
                "sources": [str(s) for s in pricing.get("sources") or []],
                "batch_discount": pricing.get("batch_discount"),
                "models": {},
            },
        )
        key = str(model.get("price_key") or model.get("model_id") or cell["model_id"] or "")
        entry = (pricing.get("models") or {}).get(key)
        if key and key not in sheet["models"]:
            entry = entry if isinstance(entry, Mapping) else {}
            rule = entry.get("image_rule")
            sheet["models"][key] = {
                "model_id": key,
                "judge": str(cell["model"]),
                "input": entry.get("input", MISSING if entry else _unpriced(summary)),
                "cached_input": entry.get("cached_input", MISSING),
                "output": entry.get("output", MISSING),
                "image_rule": json.dumps(rule, sort_keys=True) if rule else MISSING,
            }
    out = []
    for date in sorted(sheets):
        sheet = sheets[date]
        sheet["models"] = [sheet["models"][k] for k in sorted(sheet["models"])]
        out.append(sheet)
    return out


def _unpriced(summary: RunSummary) -> str:
    """What the price sheet's table says of a judge the sheet has no entry for: a panel or a
    cascade makes no call of its own and is priced through its members (listed with their
    own entries); any other such judge is free."""
    ensemble = summary.ensemble
    if summary.kind == SINGLE or ensemble is None:
        return "not priced (free)"
    members = ", ".join(dict.fromkeys(str(member.model) for member in ensemble.members))
    return f"priced through its members ({members}): it makes no call of its own"


def _config_parts(cells: pd.DataFrame) -> tuple[list[Row], list[Row]]:
    """The runs' resolved configs, each part (``model``, ``dataset``, ``runner``...) listed
    once per distinct value with the cells that used it, and one line per cell."""
    parts: dict[tuple[str, str], Row] = {}
    listed = []
    for _, cell in cells.sort_values(["dataset", "model", "modality", "prompt_id"]).iterrows():
        # Summaries are written redacted; redacting again covers folders written before that.
        config = redact(dict(cell["summary"].config))
        if isinstance(config.get("pricing"), Mapping):
            pricing = dict(config["pricing"])
            if "models" in pricing:
                pricing["models"] = "(see the price sheet above)"
            config["pricing"] = pricing
        # the console's name for the cell; the report lists cells of many sweeps together,
        # so the prompt is always named
        name = cell_display_name(
            cell["dataset"],
            cell["model"],
            cell["modality"],
            cell["prompt_id"],
            cell["summary"].cell.perturb,
            prompt_named=True,
        )
        for key in sorted(config):
            text = json.dumps(config[key], indent=2, sort_keys=True, default=str)
            part = parts.setdefault(
                (key, text), {"key": key, "json": text, "cells": 0, "example": name}
            )
            part["cells"] += 1
        listed.append(
            {
                "name": name,
                "run_id": str(cell["run_id"]),
                "sweep": str(cell.get("sweep") or ""),
                "status": str(cell["status"]),
            }
        )
    ordered = sorted(parts.values(), key=lambda p: (p["key"], -p["cells"], p["example"]))
    return ordered, listed


def provenance(cells: pd.DataFrame, analysis: Analysis) -> Row:
    summaries: list[RunSummary] = list(cells["summary"])
    finished = sorted(s.finished_at for s in summaries if s.finished_at)
    packages: dict[str, Row] = {}
    for s in summaries:
        packages.setdefault(json.dumps(s.packages, sort_keys=True), s.packages)
    parts, listed = _config_parts(cells)
    return {
        "first_run": finished[0] if finished else "unknown",
        "last_run": finished[-1] if finished else "unknown",
        "commits": sorted({s.git_commit or "unknown" for s in summaries}),
        "packages": list(packages.values()),
        "sheets": _price_rows(cells),
        "parts": parts,
        "cells": listed,
        "ignored": analysis.ignored_runs,
        "sweeps": analysis.sweeps,
    }
