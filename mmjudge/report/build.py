"""Build ``reports/<name>/index.html`` and its figures from a run or sweep directory."""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from mmjudge.errors import MMJudgeError
from mmjudge.report.figures import MODALITY_NAMES, kappa_vs_cost
from mmjudge.report.load import cell_table, write_sweep_summary

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mmjudge", "report/templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def build_report(root: Path, reports_dir: Path, name: str | None = None) -> Path:
    """Write the report for every run under ``root``; returns the report directory."""
    root = root.resolve()
    cells = cell_table(root)
    if cells.empty:
        raise MMJudgeError(f"{root}: no runs found (no summary.json below it)")
    if len(cells) > 1 or not (root / "summary.json").is_file():
        write_sweep_summary(root, cells)
    out = reports_dir / (name or root.name)
    out.mkdir(parents=True, exist_ok=True)
    figure = kappa_vs_cost(cells, out / "kappa_vs_cost.png")
    html = _ENV.get_template("report.html.j2").render(
        title=f"mmjudge report: {root.name}",
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        source=str(root),
        figure=_data_url(figure),
        datasets=_dataset_tables(cells),
        skipped=_skipped(cells),
        provenance=_provenance(cells),
        modality_names=MODALITY_NAMES,
    )
    tmp = out / "index.html.tmp"
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out / "index.html")
    return out


def _data_url(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _dataset_tables(cells: pd.DataFrame) -> list[dict[str, Any]]:
    done = cells[cells["status"] != "skipped"]
    tables = []
    for dataset, group in done.groupby("dataset", sort=True):
        rows = []
        human: dict[str, float] = {}
        for _, cell in group.sort_values(["kappa"], ascending=False, na_position="last").iterrows():
            metrics = cell["summary"].get("metrics") or {}
            human.update(metrics.get("human_human_kappa") or {})
            cost = cell["summary"].get("cost") or {}
            rows.append(
                {
                    "model": cell["model"],
                    "modality": MODALITY_NAMES.get(cell["modality"], cell["modality"]),
                    "prompt": cell["prompt_id"],
                    "kappa": _fmt(cell["kappa"]),
                    "accuracy": _fmt(cell["accuracy"]),
                    "n": int(cell["n"]),
                    "errors": int(cell["n_errors"]),
                    "unparseable": int(cell["n_unparseable"]),
                    "usd_per_million": f"{cost.get('usd_per_million', 0.0):,.2f}",
                    "total_usd": f"{cost.get('total_usd', 0.0):.4f}",
                }
            )
        tables.append(
            {
                "name": dataset,
                "rows": rows,
                "human_human": {pair: _fmt(k) for pair, k in sorted(human.items())},
            }
        )
    return tables


def _skipped(cells: pd.DataFrame) -> list[dict[str, str]]:
    skipped = cells[cells["status"] == "skipped"]
    return [
        {
            "dataset": str(cell["dataset"]),
            "model": str(cell["model"]),
            "modality": str(cell["modality"]),
            "reason": str(cell["skip_reason"]),
        }
        for _, cell in skipped.iterrows()
    ]


def _provenance(cells: pd.DataFrame) -> dict[str, Any]:
    first = cells.iloc[0]["summary"]
    return {
        "sheets": sorted({str(s) for s in cells["pricing_sheet"].dropna()}),
        "git_commit": first.get("git_commit") or "unknown",
        "packages": first.get("packages") or {},
        "finished": sorted({str(c["summary"].get("finished_at")) for _, c in cells.iterrows()}),
    }
