"""Build ``reports/<name>/index.html`` and its figures from a run or sweep directory.

The page is self-contained (styles, figures and thumbnails inline; a few lines of script
for the disagreement filters), so it opens from disk and can be mailed around. The PNGs
are also written beside it. Nothing here calls a model: only saved records are read.
"""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from mmjudge.errors import MMJudgeError
from mmjudge.report import figures, findings, spend, tables
from mmjudge.report.analysis import MODALITY_NAMES, N_BOOT, analyse
from mmjudge.report.browser import CAP, build_browser
from mmjudge.report.load import cell_table, judged_statuses, write_sweep_summary
from mmjudge.runs.status import count_statuses, status_line

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mmjudge", "report/templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

KAPPA_VS_COST = "kappa_vs_cost.png"
KAPPA_BY_DATASET = "kappa_by_dataset.png"
IMAGE_VS_TEXT = "image_vs_text.png"


def build_report(
    root: Path,
    reports_dir: Path,
    name: str | None = None,
    *,
    n_boot: int = N_BOOT,
    max_disagreements: int = CAP,
) -> Path:
    """Write the report for every run under ``root``; returns the report directory.

    ``n_boot`` resamples go into every interval; the disagreement browser shows at most
    ``max_disagreements`` items per judge and dataset.
    """
    root = Path(root).resolve()
    cells = cell_table(root)
    if cells.empty:
        raise MMJudgeError(f"{root}: no runs found (no summary.json below it)")
    if len(cells) > 1 or not (root / "summary.json").is_file():
        write_sweep_summary(root, cells)
    out = Path(reports_dir) / (name or root.name)
    out.mkdir(parents=True, exist_ok=True)

    analysis = analyse(cells, n_boot=n_boot)
    cost_png = figures.kappa_vs_cost(analysis, out / KAPPA_VS_COST)
    by_dataset_png = figures.kappa_by_dataset(analysis, out / KAPPA_BY_DATASET)
    image_png = figures.image_vs_text(analysis, out / IMAGE_VS_TEXT)
    if image_png is None:
        (out / IMAGE_VS_TEXT).unlink(missing_ok=True)
    browser = build_browser(analysis, max_disagreements)

    n_done = sum(len(d.cells) for d in analysis.datasets)
    html = _ENV.get_template("report.html.j2").render(
        title=f"mmjudge report: {root.name}",
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        source=str(root),
        n_cells=len(cells),
        n_done=n_done,
        n_boot=analysis.n_boot,
        datasets=tables.dataset_tables(analysis),
        answers=findings.answers(analysis),
        figure_cost=_data_url(cost_png),
        figure_by_dataset=_data_url(by_dataset_png),
        figure_image=_data_url(image_png) if image_png else None,
        average_panel=len(analysis.datasets) > 1,
        by_dataset=tables.kappa_by_dataset(analysis),
        effects=tables.image_effects(analysis),
        frontier=tables.frontier_rows(analysis),
        spend=spend.spend_rows(cells),
        ensembles=spend.ensemble_rows(cells),
        rankings=spend.system_ranking_rows(cells),
        browser=browser,
        skipped=tables.skipped(cells),
        failures=tables.failures(cells),
        status_line=status_line(count_statuses(judged_statuses(cells))),
        provenance=tables.provenance(cells, analysis),
        modality_names=MODALITY_NAMES,
        anchors={
            "fig_cost": findings.FIG_COST,
            "fig_by_dataset": findings.FIG_BY_DATASET,
            "fig_image": findings.FIG_IMAGE,
            "by_dataset": findings.TABLE_BY_DATASET,
            "image": findings.TABLE_IMAGE,
            "frontier": findings.TABLE_FRONTIER,
            "unfinished": findings.TABLE_UNFINISHED,
        },
    )
    tmp = out / "index.html.tmp"
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out / "index.html")
    return out


def _data_url(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
