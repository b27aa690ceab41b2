"""Build ``reports/<name>/index.html`` and its files from one or several run or sweep folders.

The page opens from disk with no network: styles, scripts (the interactive chart's library
included) and figures are inline. Beside it: the PNG figures, CSV files of the tables and the
disagreement browser's thumbnails (``thumbs/``), which the page loads lazily. Nothing here
calls a model: only saved records are read.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from mmjudge.config.names import report_folder_name
from mmjudge.errors import MMJudgeError
from mmjudge.files import write_atomic
from mmjudge.report import (
    cards,
    exports,
    figures,
    findings,
    forest,
    interactive,
    leaderboard,
    spend,
    tables,
)
from mmjudge.report import entries as bank_entries
from mmjudge.report import positions_section as positions_report
from mmjudge.report import robustness_section as robustness_report
from mmjudge.report import slice_section as slices_report
from mmjudge.report import stability_section as stability_report
from mmjudge.report import testbank_section as bank_report
from mmjudge.report import trained_section as trained_report
from mmjudge.report.analysis import MODALITY_NAMES, N_BOOT, Analysis, analyse
from mmjudge.report.browser import BUDGET, CAP, build_browser
from mmjudge.report.dataset_tables import dataset_tables
from mmjudge.report.load import cell_table, judged_statuses, write_sweep_summary
from mmjudge.report.race_section import race_context
from mmjudge.store.status import count_statuses

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mmjudge", "report/templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

KAPPA_VS_COST = "kappa_vs_cost.png"
ENSEMBLES_VS_COST = "ensembles_vs_cost.png"
KAPPA_BY_DATASET = "kappa_by_dataset.png"
IMAGE_VS_TEXT = "image_vs_text.png"

#: Where the answers link to, by the names the template uses.
_ANCHORS = {
    "fig_cost": findings.FIG_COST,
    "fig_by_dataset": findings.FIG_BY_DATASET,
    "fig_image": findings.FIG_IMAGE,
    "by_dataset": findings.TABLE_BY_DATASET,
    "image": findings.TABLE_IMAGE,
    "frontier": findings.TABLE_FRONTIER,
    "unfinished": findings.TABLE_UNFINISHED,
}


def _roots(root: Path | Sequence[Path]) -> list[Path]:
    folders = [root] if isinstance(root, str | Path) else list(root)
    if not folders:
        raise MMJudgeError("no run or sweep folder given")
    return [Path(f).resolve() for f in folders]


def build_report(
    root: Path | Sequence[Path],
    reports_dir: Path,
    name: str | None = None,
    *,
    n_boot: int = N_BOOT,
    max_disagreements: int = CAP,
    human_cost_per_label: float | None = None,
    slices: Sequence[str] | None = None,
    label_budget_usd: float | None = None,
) -> Path:
    """Write the report for every run under ``root`` (one folder, or several sweeps to be
    shown as one); returns the report directory.

    Where two folders hold the same cell (dataset, model, modality, prompt), the run that
    finished last is used. Perturbed cells (``perturb=…``) are kept out of the judges'
    comparison and measured against their clean cells in the robustness section. ``n_boot``
    resamples go into every interval; the disagreement browser shows at most
    ``max_disagreements`` items per judge and dataset; ``human_cost_per_label`` (USD,
    ``report.human_cost_per_label``) prices the human labels the cards ask for, and
    ``label_budget_usd`` (``report.label_budget_usd``) is the budget their Label budget line
    splits between human and judge labels (default: the cost of those labels). ``slices``
    (default: those the runs' ``report.slices`` asked for) break every judge's figures down
    by slice.
    """
    roots = _roots(root)
    found = _found_cells(roots)
    _sweep_summaries(roots, found)
    cells, attacked = robustness_report.split(found)
    out = Path(reports_dir) / report_folder_name([r.name for r in roots], name)
    out.mkdir(parents=True, exist_ok=True)
    analysis = analyse(cells, n_boot=n_boot)
    prices = (human_cost_per_label, label_budget_usd)
    page = _page_context(roots, cells, analysis, out, max_disagreements, prices)
    attacks = robustness_report.attacks(attacked, analysis, n_boot)
    page["robustness"] = robustness_report.rows(attacks, analysis)
    page["robustness_cards"] = robustness_report.cards(attacks, analysis)
    asked = list(slices) if slices is not None else slices_report.names_asked(cells)
    sliced = slices_report.by_slice(analysis, asked, strict=slices is not None)
    page["slices"] = slices_report.rows(sliced, analysis)
    page["slices_asked"] = bool(asked)
    page["slice_worst"] = slices_report.worst_lines(sliced, analysis)
    races = race_context(roots)
    page["races"] = races
    page["race_choice"] = {race.dataset: race.card for race in races}
    exports.write_json(out / exports.ROBUSTNESS_JSON, robustness_report.figures(attacks, analysis))
    exports.write_json(out / exports.SLICES_JSON, slices_report.figures(sliced, analysis))
    _write_page(out, _ENV.get_template("report.html.j2").render(**page))
    return out


def _found_cells(roots: list[Path]) -> pd.DataFrame:
    """Every run below the folders given, one row per cell; an error when there is none."""
    cells = cell_table(roots)
    if cells.empty:
        where = ", ".join(str(r) for r in roots)
        raise MMJudgeError(f"{where}: no runs found (no summary.json below it)")
    return cells


def _page_context(
    roots: list[Path],
    cells: pd.DataFrame,
    analysis: Analysis,
    out: Path,
    max_disagreements: int,
    prices: tuple[float | None, float | None] = (None, None),
) -> dict[str, Any]:
    """What the page template shows: the files beside the page are written on the way
    (figures, the browser's thumbnails, CSV files)."""
    pictures = _figures(analysis, out)
    browser = build_browser(analysis, max_disagreements, out)
    rankings = leaderboard.cell_rankings(cells)
    return {
        **_overview(roots, cells, analysis, out, prices),
        "figures": pictures,
        **_answer_tables(cells, analysis),
        "rankings": spend.system_ranking_rows(rankings),
        "leaderboards": leaderboard.boards(rankings),
        "leaderboard_csv": leaderboard.write_leaderboard(rankings, out),
        "browser": browser,
        "browser_json": interactive.script_json(dataclasses.asdict(browser.payload())),
        "browser_budget": BUDGET,
        "csv": exports.write_csvs(analysis, out),
        "chart": interactive.embed(analysis),
        "filters": _filters(analysis),
        "modality_names": MODALITY_NAMES,
        "anchors": _ANCHORS,
    }


def _overview(
    roots: list[Path],
    cells: pd.DataFrame,
    analysis: Analysis,
    out: Path,
    prices: tuple[float | None, float | None] = (None, None),
) -> dict[str, Any]:
    """The page's head: what it was built from, and the headline cards (``prices``: the
    human label's price and the label budget, USD)."""
    return {
        "title": f"mmjudge report: {out.name}",
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "sources": [str(r) for r in roots],
        "sweeps": analysis.sweeps,
        "n_cells": len(cells),
        "n_judges": sum(len(d.cells) for d in analysis.datasets),
        "n_ensembles": sum(len(d.ensembles) for d in analysis.datasets),
        "n_boot": analysis.n_boot,
        "cards": cards.cards(analysis, *prices),
        "cells_clause": cells_clause(cells, analysis),
        "asked_grades": analysis.asked_lines,
    }


def cells_clause(cells: pd.DataFrame, analysis: Analysis) -> str:
    """What the report is built from, in one clause: ``17 judge cells (16 complete, 1
    failed), of which 16 are analysed, plus 2 panels and 2 cascades built from their saved
    records``."""
    counts = count_statuses(judged_statuses(cells))
    judged = sum(counts.values())
    statuses = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items())
    analysed = sum(len(d.cells) for d in analysis.datasets)
    kinds = [e.kind for d in analysis.datasets for e in d.ensembles]
    of_them = (
        f"all {analysed} are analysed"
        if analysed == judged and judged > 1
        else f"{analysed} {'is' if analysed == 1 else 'are'} analysed"
    )
    text = f"{judged} judge cell{'s' * (judged != 1)} ({statuses or 'none'}), of which {of_them}"
    built = [
        f"{n} {kind}{'s' * (n != 1)}" for kind in ("panel", "cascade") if (n := kinds.count(kind))
    ]
    if built:
        text += f", plus {' and '.join(built)} built from their saved records"
    replaced = len(analysis.ignored_runs)
    if replaced:
        text += (
            f"; {replaced} older run{'s' * (replaced != 1)} replaced by a later run of the "
            "same cell"
        )
    return text


def _answer_tables(cells: pd.DataFrame, analysis: Analysis) -> dict[str, Any]:
    """The answers and the tables behind them."""
    return {
        "datasets": dataset_tables(analysis),
        "answers": findings.answers(analysis),
        "average_panel": len(analysis.datasets) > 1,
        "by_dataset": tables.kappa_by_dataset(analysis),
        "shown_judges": len(forest.shown_judges(analysis)[0]),
        "effects": tables.image_effects(analysis),
        "frontier": tables.frontier_rows(analysis),
        "scales": tables.chance_and_humans(analysis),
        "spend": spend.spend_rows(cells),
        "ensembles": spend.ensemble_rows(cells),
        "designs": bank_report.design_rows(analysis),
        "coverage": bank_report.coverage_rows(cells),
        "entries": bank_entries.entry_rows(cells),
        "stability": stability_report.stability_rows(analysis),
        "positions": positions_report.positions_table(analysis),
        "trained": trained_report.trained_rows(analysis),
        "skipped": tables.skipped(cells),
        "failures": tables.failures(cells),
        "provenance": tables.provenance(cells, analysis),
    }


def _write_page(out: Path, html: str) -> None:
    """``index.html``, replaced in one step so a reader never sees half a page."""
    write_atomic(out / "index.html", html)


def _sweep_summaries(roots: list[Path], cells: pd.DataFrame) -> None:
    """``sweep_summary.json`` in each sweep folder, listing that folder's own cells."""
    for folder in roots:
        own = cells[cells["run_dir"].map(lambda d, f=folder: Path(d).is_relative_to(f))]
        if len(own) > 1 or not (folder / "summary.json").is_file():
            write_sweep_summary(folder, own)


def _figures(analysis: Analysis, out: Path) -> dict[str, str | None]:
    """Draw every figure beside the page; the page gets each as a data URL (None: not drawn,
    and any older file of that name removed)."""
    drawn = {
        "cost": figures.kappa_vs_cost(analysis, out / KAPPA_VS_COST),
        "ensembles": figures.ensembles_vs_cost(analysis, out / ENSEMBLES_VS_COST),
        "by_dataset": forest.kappa_by_dataset(analysis, out / KAPPA_BY_DATASET),
        "image": forest.image_vs_text(analysis, out / IMAGE_VS_TEXT),
    }
    for key, name in (("ensembles", ENSEMBLES_VS_COST), ("image", IMAGE_VS_TEXT)):
        if drawn[key] is None:
            (out / name).unlink(missing_ok=True)
    return {key: _data_url(path) if path else None for key, path in drawn.items()}


def _filters(analysis: Analysis) -> dict[str, list[str]]:
    """The values the table filters offer."""
    cells = [c for d in analysis.datasets for c in d.cells]
    return {
        "dataset": [d.name for d in analysis.datasets],
        "model": sorted({c.judge.model for c in cells}),
        "modality": [
            MODALITY_NAMES.get(m, m)
            for m in sorted({c.judge.modality for c in cells}, key=lambda m: (m != "text", m))
        ],
        "prompt": sorted({c.judge.prompt_id for c in cells}),
    }


def _data_url(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
