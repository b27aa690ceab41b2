"""The report's tables as plain rows of display strings (the template only lays them out)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mmjudge.config.names import cell_display_name
from mmjudge.keyguard import redact
from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import Measure
from mmjudge.metrics.scoring import LEVEL, JudgeScore
from mmjudge.report.analysis import (
    MODALITY_NAMES,
    Analysis,
    Cell,
    Comparison,
    DatasetStats,
    Interval,
    Judge,
)
from mmjudge.report.findings.prose import (
    NOT_DISTINGUISHABLE,
    dataset_anchor,
    difference,
    interval,
    num,
)
from mmjudge.store import RunSummary
from mmjudge.store.status import COMPLETE, DRY_RUN, PARTIAL, SKIPPED

Row = dict[str, Any]


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def percent(value: Any, digits: int = 1) -> str:
    x = _float(value)
    return "–" if not math.isfinite(x) else f"{100 * x:.{digits}f}%"


def distribution(counts: Mapping[Any, Any] | None) -> str:
    """``{"0": 35, "1": 40, "2": 25}`` as ``0:35% 1:40% 2:25%``."""
    if not counts:
        return "–"
    total = sum(int(v) for v in counts.values())
    if total == 0:
        return "–"
    parts = []
    for grade, count in counts.items():
        label = str(grade)
        if label.endswith(".0"):
            label = label[:-2]
        parts.append(f"{label}:{round(100 * int(count) / total)}%")
    return " ".join(parts)


def money(value: Any) -> str:
    x = _float(value)
    if not math.isfinite(x):
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"


def tokens(value: Any) -> str:
    x = _float(value)
    return "–" if not math.isfinite(x) else f"{x:,.0f}"


def seconds(value: Any) -> str:
    x = _float(value)
    if not math.isfinite(x):
        return "–"
    return f"{x:.2f}" if x >= 0.01 else f"{x:.0e}" if x > 0 else "0"


# --------------------------------------------------------------------------- per dataset


@dataclass(frozen=True)
class ScoreCells:
    """A score as the per-dataset table shows it, one cell per measure of the catalogue."""

    headline: str
    """The headline measure with its interval (``0.412 [0.301, 0.518]``)."""
    others: list[str]
    """Every other measure's value, in catalogue order."""
    n: str
    """The items they are on."""


@dataclass(frozen=True)
class MeasureColumns:
    """The per-dataset table's measure headers, and its row for a judge answering at random."""

    headline: str
    """The headline measure's header (``κ [95% CI]``)."""
    others: list[str]
    """The other measures' headers, in catalogue order."""
    named: str
    """The other measures named in a sentence (``κ linear, κ quadratic, α``)."""
    chance: ScoreCells
    """What chance gets on each measure (blank where it depends on the grades)."""


def _measure_cell(measure: Measure, value: Interval, with_interval: bool) -> str:
    if with_interval:
        return interval(value, measure.digits)
    return num(value.estimate, measure.digits)


def _score_cells(score: JudgeScore | None) -> ScoreCells:
    """The headline measure with its interval, the others' values and the items they are on
    ("–" throughout for a cell that has no score)."""
    headline, others = _measures()
    if score is None:
        return ScoreCells("–", ["–"] * len(others), "0")
    return ScoreCells(
        headline=_measure_cell(headline, score[headline.name], True),
        others=[_measure_cell(m, score[m.name], False) for m in others],
        n=f"{score.n_items:,}",
    )


def _measures() -> tuple[Measure, list[Measure]]:
    """The headline measure and the others the table shows (every measure of the judge
    against the consensus)."""
    shown = catalogue.measures(catalogue.Comparison.CONSENSUS)
    headline = catalogue.measure(catalogue.HEADLINE)
    return headline, [m for m in shown if m is not headline]


def measure_columns() -> MeasureColumns:
    """The headers of the per-dataset table's measures and its chance row."""
    headline, others = _measures()

    def chance(measure: Measure) -> str:
        return "" if measure.chance is None else num(measure.chance, measure.digits)

    return MeasureColumns(
        headline=f"{headline.label} [{100 * LEVEL:g}% CI]",
        others=[m.label for m in others],
        named=", ".join(m.label for m in others),
        chance=ScoreCells(chance(headline), [chance(m) for m in others], ""),
    )


@dataclass(frozen=True)
class JudgeRow:
    """A judge's row of the per-dataset table."""

    rank: int | None
    """Its place by κ (None without a κ)."""
    dataset: str
    sweep: str
    model: str
    modality: str
    """The modality's name (``text only``)."""
    prompt: str
    scores: ScoreCells
    """Its measures against the consensus."""
    unparseable: str
    """The share of answers without a grade."""
    errors: str
    """Failed rows."""
    dist_judge: str
    """The judge's grades (``0:35% 1:40% 2:25%``)."""
    dist_consensus: str
    """The consensus grades on the same items."""
    input_tokens: str
    output_tokens: str
    image_tokens: str
    usd: str
    """Dollars per million judgments."""
    usd_image: str
    usd_text: str
    p50: str
    """Median latency, seconds."""
    p95: str
    frontier: bool
    """Whether it lies on the cost–κ frontier."""


@dataclass(frozen=True)
class HumanRow:
    """One annotator against another, scored like a judge: the ceiling."""

    pair: str
    """``a vs b``."""
    scores: ScoreCells
    dist_a: str
    """``a``'s grades on the items both graded."""
    dist_b: str


@dataclass(frozen=True)
class ConfusionCell:
    count: str
    shade: str
    """The cell's shading, by its share of its row."""
    diagonal: bool


@dataclass(frozen=True)
class ConfusionRow:
    grade: str
    """The consensus grade."""
    cells: list[ConfusionCell]
    """One per judge grade."""


@dataclass(frozen=True)
class Confusion:
    """Consensus grade (rows) × judge grade (columns) for one judge."""

    judge: str
    grades: list[str]
    rows: list[ConfusionRow]


@dataclass(frozen=True)
class DatasetTable:
    """The per-dataset section: its judges, its annotators' pairs and the confusion tables."""

    name: str
    anchor: str
    """The section's id on the page."""
    columns: MeasureColumns
    rows: list[JudgeRow]
    humans: list[HumanRow]
    meanings: dict[str, str]
    """What each grade means, where the dataset says."""
    n_items: int
    n_queries: int
    alpha_humans: str
    """Krippendorff's α among every annotator."""
    confusion: list[Confusion]


def judge_row(analysis: Analysis, stats: DatasetStats, cell: Cell, rank: int | None) -> JudgeRow:
    summary = cell.summary
    m = summary.metrics
    cost = summary.cost
    tok = summary.tokens
    latency = summary.latency_s
    dist = m.label_distribution or {}
    return JudgeRow(
        rank=rank,
        dataset=cell.dataset,
        sweep=cell.sweep,
        model=cell.judge.model,
        modality=MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
        prompt=cell.judge.prompt_id,
        scores=_score_cells(cell.score),
        unparseable=percent(m.unparseable_rate),
        errors=f"{summary.n_errors:,}",
        dist_judge=distribution(dist.get("judge")),
        dist_consensus=distribution(dist.get("consensus")),
        input_tokens=tokens(tok.mean_input),
        output_tokens=tokens(tok.mean_output),
        image_tokens=tokens(tok.mean_image),
        usd=money(cost.usd_per_million),
        usd_image=money(cost.image_usd_per_million),
        usd_text=money(cost.text_usd_per_million),
        p50=seconds(latency.p50),
        p95=seconds(latency.p95),
        frontier=cell.frontier,
    )


def dataset_tables(analysis: Analysis) -> list[DatasetTable]:
    columns = measure_columns()
    out = []
    for index, stats in enumerate(analysis.datasets):
        rows = []
        for rank, cell in enumerate(stats.cells, start=1):
            rows.append(judge_row(analysis, stats, cell, rank if cell.kappa.known else None))
        humans = [
            HumanRow(
                pair=f"{p.a} vs {p.b}",
                scores=_score_cells(p.score),
                dist_a=f"{p.a} {distribution(p.distribution_a)}",
                dist_b=f"{p.b} {distribution(p.distribution_b)}",
            )
            for p in stats.human_pairs
        ]
        out.append(
            DatasetTable(
                name=stats.name,
                anchor=dataset_anchor(index, stats.name),
                columns=columns,
                rows=rows,
                humans=humans,
                meanings=stats.meanings,
                n_items=stats.items.n,
                n_queries=len(stats.items.query_codes),
                alpha_humans=num(stats.alpha_humans, 3),
                confusion=[confusion(analysis, stats, cell) for cell in stats.cells],
            )
        )
    return out


def confusion(analysis: Analysis, stats: DatasetStats, cell: Cell) -> Confusion:
    """Consensus grade (rows) × judge grade (columns), shaded by the share of each row."""
    m = cell.summary.metrics
    grades = [str(g) for g in m.grades] if m.grades else [num(g, 0) for g in stats.grades]
    matrix = m.confusion_matrix or []
    rows = []
    for i, (grade, counts) in enumerate(zip(grades, matrix, strict=False)):
        total = sum(counts) or 1
        rows.append(
            ConfusionRow(
                grade=grade,
                cells=[
                    ConfusionCell(
                        count=f"{c:,}",
                        shade=f"{0.08 + 0.6 * c / total:.2f}" if c else "0",
                        diagonal=i == j,
                    )
                    for j, c in enumerate(counts)
                ],
            )
        )
    return Confusion(judge=analysis.judge_name(cell.judge), grades=grades, rows=rows)


# --------------------------------------------------------------------------- across datasets


def kappa_by_dataset(analysis: Analysis) -> Row:
    names = [d.name for d in analysis.datasets]
    judges: dict[Judge, dict[str, Cell]] = {}
    for stats in analysis.datasets:
        for cell in stats.cells:
            judges.setdefault(cell.judge, {})[stats.name] = cell
    averages = {a.judge: a for a in analysis.averages}
    rows = []
    for judge, cells in judges.items():
        known = [c for c in cells.values() if c.kappa.known]
        verdict = "–"
        if len(known) > 1:
            high = max(known, key=lambda c: c.kappa.estimate)
            low = min(known, key=lambda c: c.kappa.estimate)
            verdict = (
                NOT_DISTINGUISHABLE if high.kappa.overlaps(low.kappa) else "differs by dataset"
            )
        average = averages.get(judge)
        rows.append(
            {
                "judge": analysis.judge_name(judge),
                "model": judge.model,
                "modality": MODALITY_NAMES.get(judge.modality, judge.modality),
                "prompt": judge.prompt_id,
                "kappas": [interval(cells[n].kappa) if n in cells else "not run" for n in names],
                "mean": interval(average.kappa) if average else "–",
                "usd": money(average.usd_per_million) if average else "–",
                "verdict": verdict,
                "sort": -(average.kappa.estimate if average else -math.inf),
            }
        )
    rows.sort(key=lambda r: (r["sort"], r["judge"]))
    ceilings = []
    for stats in analysis.datasets:
        ceiling = stats.ceiling
        ceilings.append(
            "–"
            if ceiling is None
            else num(ceiling[0])
            if ceiling[0] == ceiling[1]
            else f"{num(ceiling[0])}–{num(ceiling[1])}"
        )
    return {"datasets": names, "rows": rows, "ceilings": ceilings}


def _effect_row(name: str, c: Comparison) -> Row:
    verdict = (
        NOT_DISTINGUISHABLE
        if not c.distinguishable
        else "image helps"
        if c.difference > 0
        else "image hurts"
    )
    return {
        "model": c.a.judge.model,
        "prompt": c.a.judge.prompt_id,
        "modality": MODALITY_NAMES.get(c.a.judge.modality, c.a.judge.modality),
        "comparison": f"{MODALITY_NAMES.get(c.a.judge.modality, c.a.judge.modality)} − text only",
        "dataset": name,
        "kappa_a": num(c.kappa_a, 3),
        "kappa_b": num(c.kappa_b, 3),
        "difference": num(c.difference, 3, sign=True),
        "ci": f"[{num(c.low, 3, sign=True)}, {num(c.high, 3, sign=True)}]",
        "p": "< 0.001" if c.p_value < 0.001 else f"{c.p_value:.3f}",
        "n": f"{c.n_items:,}",
        "verdict": verdict,
    }


def image_effects(analysis: Analysis) -> list[Row]:
    rows = [_effect_row(d.name, c) for d in analysis.datasets for c in d.modality_effects]
    return sorted(rows, key=lambda r: (r["model"], r["prompt"], r["comparison"], r["dataset"]))


def _judge_fields(judge: Judge) -> Row:
    """What the table filters match a row on."""
    return {
        "model": judge.model,
        "modality": MODALITY_NAMES.get(judge.modality, judge.modality),
        "prompt": judge.prompt_id,
    }


def chance_and_humans(analysis: Analysis) -> dict[str, str]:
    """Per dataset, chance and the human–human κ as one cell of text (``chance 0.00 ·
    humans 0.78``), for the tables whose κ has no row of its own to set them against."""
    out = {}
    for stats in analysis.datasets:
        ceiling = stats.ceiling
        humans = (
            "–"
            if ceiling is None
            else num(ceiling[0])
            if ceiling[0] == ceiling[1]
            else f"{num(ceiling[0])}–{num(ceiling[1])}"
        )
        out[stats.name] = f"chance 0.00 · humans {humans}"
    return out


def against_chance(kappa: Interval, ceiling: tuple[float, float] | None) -> str:
    """Where an interval sits between chance (κ 0) and the human–human κ, in words."""
    place = "above chance" if kappa.above_chance else "not above chance (interval reaches 0)"
    if ceiling is None:
        return f"{place}; no human–human κ"
    value = num(ceiling[0]) if ceiling[0] == ceiling[1] else f"{num(ceiling[0])}–{num(ceiling[1])}"
    return f"{place}; humans {value}"


def frontier_rows(analysis: Analysis) -> list[Row]:
    rows = []
    for stats in analysis.datasets:
        steps = {id(c.a): c for c in stats.frontier_steps}
        for cell in stats.frontier_cells:
            step = steps.get(id(cell))
            rows.append(
                {
                    "dataset": stats.name,
                    "judge": analysis.judge_name(cell.judge),
                    **_judge_fields(cell.judge),
                    "usd": money(cell.usd_per_million),
                    "kappa": interval(cell.kappa),
                    "scale": against_chance(cell.kappa, stats.ceiling),
                    "step": (
                        f"{difference(step)} vs {analysis.judge_name(step.b.judge)}"
                        if step
                        else "cheapest"
                    ),
                    "verdict": (
                        "–"
                        if step is None
                        else "better"
                        if step.distinguishable and step.difference > 0
                        else NOT_DISTINGUISHABLE
                        if not step.distinguishable
                        else "worse on shared items"
                    ),
                }
            )
    if len(analysis.datasets) > 1:
        for a in analysis.average_frontier:
            rows.append(
                {
                    "dataset": "average over datasets",
                    "judge": analysis.judge_name(a.judge),
                    **_judge_fields(a.judge),
                    "usd": money(a.usd_per_million),
                    "kappa": interval(a.kappa),
                    "scale": against_chance(a.kappa, None).replace(
                        "no human–human κ", "humans: see each dataset"
                    ),
                    "step": f"mean over {len(a.datasets)} dataset(s): {', '.join(a.datasets)}",
                    "verdict": "–",
                }
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
                "errors": f"{errors:,} of {n:,}" if n else "–",
                "kinds": ", ".join(f"{k} {v:,}" for k, v in kinds.items()) or "–",
                "first_error": str(cell["first_error"] or "–"),
                "reason": str(cell["status_reason"] or "–"),
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
            "reason": str(cell["skip_reason"] or "–"),
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
                "input": entry.get("input", "–" if entry else "not priced (free)"),
                "cached_input": entry.get("cached_input", "–"),
                "output": entry.get("output", "–"),
                "image_rule": json.dumps(rule, sort_keys=True) if rule else "–",
            }
    out = []
    for date in sorted(sheets):
        sheet = sheets[date]
        sheet["models"] = [sheet["models"][k] for k in sorted(sheet["models"])]
        out.append(sheet)
    return out


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
