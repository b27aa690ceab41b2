"""Collect the runs under a run or sweep directory into one table of cells."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from mmjudge.results import read_summary, run_dirs

SWEEP_SUMMARY = "sweep_summary.json"


def cell_table(root: Path) -> pd.DataFrame:
    """One row per run (sweep cell), from each run's ``summary.json``."""
    rows = []
    for run_dir in run_dirs(root):
        summary = read_summary(run_dir)
        metrics = summary.get("metrics") or {}
        cost = summary.get("cost") or {}
        rows.append(
            {
                "run_dir": str(run_dir),
                "run_id": summary.get("run_id", run_dir.name),
                "status": summary.get("status", "complete"),
                "skip_reason": summary.get("skip_reason"),
                "dataset": summary.get("dataset"),
                "model": summary.get("model"),
                "model_id": summary.get("model_id"),
                "modality": summary.get("modality"),
                "prompt_id": summary.get("prompt_id"),
                "pricing_sheet": summary.get("pricing_sheet"),
                "n": summary.get("n_judgments", 0),
                "n_errors": summary.get("n_errors", 0),
                "n_unparseable": summary.get("n_unparseable", 0),
                "kappa": metrics.get("kappa"),
                "accuracy": metrics.get("accuracy"),
                "usd_per_million": cost.get("usd_per_million", 0.0),
                "total_usd": cost.get("total_usd", 0.0),
                "summary": summary,
            }
        )
    return pd.DataFrame(rows)


def write_sweep_summary(root: Path, cells: pd.DataFrame) -> dict[str, Any]:
    """``sweep_summary.json`` in a sweep directory: every cell, skipped ones with reasons."""
    data: dict[str, Any] = {
        "schema_version": 1,
        "n_cells": len(cells),
        "n_skipped": int((cells["status"] == "skipped").sum()) if len(cells) else 0,
        "cells": [
            {
                key: (None if pd.isna(row[key]) else row[key])
                if not isinstance(row[key], dict | list)
                else row[key]
                for key in (
                    "run_id",
                    "status",
                    "skip_reason",
                    "dataset",
                    "model",
                    "modality",
                    "prompt_id",
                    "n",
                    "kappa",
                    "usd_per_million",
                )
            }
            for _, row in cells.iterrows()
        ],
    }
    tmp = root / (SWEEP_SUMMARY + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, root / SWEEP_SUMMARY)
    return data
